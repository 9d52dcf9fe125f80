# A Python float is weakly typed (f*): it takes the array's width, so bfloat16 stays bfloat16.
import jax.numpy as jnp


def f(x, scale):
    return x * scale


args = (jnp.ones(3, jnp.bfloat16), 0.5)
