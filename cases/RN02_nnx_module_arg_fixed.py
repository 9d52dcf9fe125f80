"""RN02 fixed: nnx.jit in place of jax.jit writes the stream's count back after each call, so
each call draws a new dropout mask."""

import jax.numpy as jnp
from flax import nnx

dropout = nnx.Dropout(0.5, rngs=nnx.Rngs(0))


@nnx.jit
def apply(module, x):
    return module(x)


def f(x):
    return [apply(dropout, x) for _ in range(2)]


args = (jnp.ones(8),)
