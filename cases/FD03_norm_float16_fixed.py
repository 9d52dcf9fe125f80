"""The fix of FD03_norm_float16_broken.py: the norm of the float16 matrix taken in float32.

Report: jax-ml/jax#39899 (https://github.com/jax-ml/jax/issues/39899) and its fix, PR #40819
(upcast half-precision inputs to float32 for the norm). The gradient with respect to the float16
input is float16 0.333251953125, which numpy prints as 0.3333: 100 / 300 at float16 precision.
"""
import jax.numpy as jnp


def f(x):
    return jnp.linalg.norm(x.astype(jnp.float32))


args = (jnp.full((3, 3), 100, dtype=jnp.float16),)
