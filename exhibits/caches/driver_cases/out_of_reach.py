# A jit object the exhibit cannot reach (a default argument value): JAX compiles it, no call is
# observed, and the run says so.
import jax
import jax.numpy as jnp


def double(x):
    return x * 2


def f(x, step=jax.jit(double)):
    return step(x), step(x + 1)


args = (jnp.ones(3),)
