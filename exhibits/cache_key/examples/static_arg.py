# A static argument is baked into the program: a new value gives a new computation digest.
import jax.numpy as jnp


def f(x, n):
    for _ in range(n):
        x = jnp.sin(x)
    return x


args = (jnp.ones(5), 3)
static_argnums = (1,)
