# The persistent cache key of a jitted layer: which of JAX's eight ingredients change when
# you change one thing? Try the perturbation buttons.
import jax.numpy as jnp


def f(x, w):
    y = jnp.dot(x, w)
    return jnp.tanh(y)


args = (jnp.ones((4, 8)), jnp.ones((8, 8)))
