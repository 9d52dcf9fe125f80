"""jnp.linalg.norm of a float16 matrix whose norm (300) fits float16 but whose sum of squares
(90,000) does not: the norm is inf and the gradient silently 0.

Report: jax-ml/jax#39899, "`jnp.linalg.norm` narrows float16 back *before* the `sqrt` ... (wrong
primal, silently-zero gradient)" (https://github.com/jax-ml/jax/issues/39899). The gradient
x / ||x|| is 100 / 300 = 0.3333 at every element; jax.grad returns 0.0 everywhere (x / inf),
with no NaN or Inf to show that anything went wrong.
"""
import jax.numpy as jnp


def f(x):
    return jnp.linalg.norm(x)


args = (jnp.full((3, 3), 100, dtype=jnp.float16),)
