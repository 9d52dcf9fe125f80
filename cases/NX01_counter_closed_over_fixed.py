"""flax#3997 fixed the way the hint says: the module is an argument of ``nnx.jit``, which carries
its new count out (``counter.count`` is 1 after a call). See
``NX01_counter_closed_over_broken.py``."""

import jax.numpy as jnp
from flax import nnx


class Count(nnx.Variable):
    pass


class Counter(nnx.Module):
    def __init__(self):
        self.count = Count(jnp.array(0))

    def __call__(self, x):
        self.count[...] += 1
        return x * self.count[...]


@nnx.jit
def f(counter, x):
    return counter(x)


args = (Counter(), jnp.arange(3.0))
