"""A config context: default_matmul_precision is part of the tracing context, so the same call
inside it traces again."""
import jax
import jax.numpy as jnp

step = jax.jit(lambda a, b: a @ b)
a = jnp.ones((4, 4))


def f(a):
    step(a, a)
    with jax.default_matmul_precision("highest"):
        step(a, a)
    step(a, a)  # back outside: a cache hit


args = (a,)
