# A plain function, jitted once and called with two shapes.
import jax
import jax.numpy as jnp


def scale(x):
    return x * 2.0


def f(x):
    step = jax.jit(scale)
    return step(x), step(x + 1), step(jnp.ones(4))


args = (jnp.ones(3),)
