"""flax#5050 fixed the way the hint says: ``nnx.merge(..., copy=True)`` gives the trace its own
Variables. See ``NX03_merge_no_copy_broken.py``."""

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
    model = nnx.merge(graphdef, params, state, copy=True)
    model.train()
    return model(tokens).sum()


args = (params, state)
