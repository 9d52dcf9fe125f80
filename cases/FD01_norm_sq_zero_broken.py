"""The squared 2-norm of a zero vector, differentiated: jnp.linalg.norm(x) ** 2 at x = 0.

Report: jax-ml/jax#4177, "Gradient of squared 2-norm returns NaN when input is vector of zeros"
(https://github.com/jax-ml/jax/issues/4177; the same in #21723 and #2377). ||x||^2 is sum(x**2),
smooth everywhere with gradient 2x = [0, 0] here, but jax.grad goes through norm's sqrt, whose
derivative at 0 is infinite, and returns [nan, nan]. The finite differences are [0, 0].
"""
import jax.numpy as jnp


def f(x):
    return jnp.linalg.norm(x) ** 2


args = (jnp.zeros(2),)
