"""Randomness that does not advance: an NNX model's Dropout under plain jax.jit through
nnx.split/nnx.merge, the new state never returned (the stateful-RNG pattern of
https://github.com/google/flax/issues/5116, "using jax.grad/jax.jit instead of nnx.jit ...
stateful RNGs"). The Rngs stream's count advances inside the trace only: every call starts from
the same count and draws the same dropout mask. Plain JAX raises nothing."""

import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))


model = Model(nnx.Rngs(0))
graphdef, state = nnx.split(model)


@jax.jit
def forward(state, x):
    m = nnx.merge(graphdef, state)
    return m(x)


def f(x):
    return [forward(state, x) for _ in range(2)]


args = (jnp.ones((2, 4)),)
