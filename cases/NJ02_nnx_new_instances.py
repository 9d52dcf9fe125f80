"""nnx.jit does not recompile for a new module instance with the same structure (the test script
of https://github.com/google/flax/issues/4329, cgarciae: "nnx.jit does not seem to recompile
based instance identity"): two nnx.Linear instances, one compile of jit(forward)."""

import jax
from flax import nnx


@nnx.jit
def forward(m, x):
    return m(x)


def f(seed):
    rngs = nnx.Rngs(seed)
    m1 = nnx.Linear(2, 3, rngs=rngs)
    m2 = nnx.Linear(2, 3, rngs=rngs)
    x1 = jax.random.uniform(rngs(), (5, 2))
    x2 = jax.random.uniform(rngs(), (5, 2))
    return forward(m1, x1), forward(m2, x2)


args = (0,)
