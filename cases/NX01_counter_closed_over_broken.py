"""An NNX module with a mutable ``Variable``, closed over by ``f``, changed inside a transform.

Report: google/flax#3997, 'NNX + mutable state + JIT = "Cannot mutate <module name> from a
different trace level"' (https://github.com/google/flax/issues/3997): a ``Counter`` whose call
adds one to its count. ``f`` closes over the module; under ``jax.jit`` (or ``jax.grad``) Flax
refuses to write the traced count into an object that lives outside the trace
(``flax.errors.TraceContextError``), at the line that changes it.
"""

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


counter = Counter()


def f(x):
    return counter(x)


args = (jnp.arange(3.0),)
