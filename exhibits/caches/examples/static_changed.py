"""A static argument changed, then changed back: the C++ cache still holds the first entry."""
import jax.numpy as jnp


def f(x, n):
    return jnp.sum(x**n)


static_argnums = (1,)
calls = [
    (jnp.ones(3), 2),
    (jnp.ones(3), 3),
    (jnp.ones(3), 2),
]
args = calls[0]
