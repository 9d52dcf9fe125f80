"""Randomness that does not advance: an nnx.Module passed to plain jax.jit (modules are pytrees,
so jax.jit accepts them; https://github.com/google/flax/issues/5116 and the NNX docs' "use
nnx.jit for stateful modules"). Inside the trace the module is rebuilt from its leaves, the
dropout stream's count advances there and is dropped: every call gives the same mask."""

import jax
import jax.numpy as jnp
from flax import nnx

dropout = nnx.Dropout(0.5, rngs=nnx.Rngs(0))


@jax.jit
def apply(module, x):
    return module(x)


def f(x):
    return [apply(dropout, x) for _ in range(2)]


args = (jnp.ones(8),)
