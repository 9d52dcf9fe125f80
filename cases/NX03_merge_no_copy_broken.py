"""A functional NNX loss that merges its state without a copy, differentiated with ``jax.grad``.

Report: google/flax#5050, "Dropout can yield TraceContextError is nnx.merge(..., copy=False)"
(https://github.com/google/flax/issues/5050): since Flax 0.11.2 ``nnx.merge`` reuses the
state's Variables (``copy=False``), so a dropout layer's RNG counter, which lives outside
``jax.grad``'s trace, is advanced from inside it: ``TraceContextError: Cannot mutate RngCount
from a different trace level``. ``jax.jit`` alone does not raise; ``jax.grad`` does.
"""

import jax.numpy as jnp
from flax import nnx

model = nnx.MultiHeadAttention(
    num_heads=2,
    in_features=8,
    qkv_features=8,
    out_features=8,
    rngs=nnx.Rngs(0),
    dropout_rate=0.1,
    decode=False,
)
graphdef, params, state = nnx.split(model, nnx.Param, ...)
tokens = jnp.linspace(-1.0, 1.0, 64).reshape(2, 4, 8)


def f(params, state):
    model = nnx.merge(graphdef, params, state)
    model.train()
    return model(tokens).sum()


args = (params, state)
