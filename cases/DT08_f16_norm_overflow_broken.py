"""``jnp.linalg.norm`` of a float16 matrix whose norm (300) fits float16 but whose sum of
squares (90,000) does not: the norm is inf.

Report: jax-ml/jax#39899, "``jnp.linalg.norm`` narrows float16 back *before* the ``sqrt``"
(https://github.com/jax-ml/jax/issues/39899; also ``FD03_norm_float16``, where the transpose
exhibit finds its zero gradient). float16's largest value is 65,504; float32 computes 300.
"""

import jax.numpy as jnp


def f(x):
    return jnp.linalg.norm(x)


args = (jnp.full((3, 3), 100, dtype=jnp.float16),)
