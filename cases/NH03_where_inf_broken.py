"""A where that guards an infinite branch: the forward value is fine, the gradient is NaN.

Report: jax-ml/jax#2630, "Gradient of jax.lax.select is wrong with jnp.inf"
(https://github.com/jax-ml/jax/issues/2630): ``jnp.where(x > 0, 0, x * jnp.inf)`` at ``x = 1``
returns 0, but ``x * inf`` was computed anyway, and its cotangent 0 times inf is NaN.
"""
import jax.numpy as jnp


def f(x):
    return jnp.where(x > 0, 0.0, x * jnp.inf)


args = (jnp.array(1.0),)
