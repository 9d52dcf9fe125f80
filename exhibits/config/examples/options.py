# The config exhibit needs no code: it lists every jax.config option. With `f` and `args`
# defined here, its retrace experiment flips options around a jitted call of your `f`.
import jax.numpy as jnp


def f(x):
    # arange(3.0) is float64 under jax_enable_x64: watch the jaxpr change
    return jnp.dot(x, x) * jnp.arange(3.0)


args = (jnp.ones(3),)
