"""The fix of DT03_float64_arg_broken.py (jax-ml/jax#652,
https://github.com/jax-ml/jax/issues/652) without x64: round the matrix to float32 yourself, so
that what JAX computes on is what the snippet says (with x64 on, JAX keeps float64 instead).
"""

import jax.numpy as jnp
import numpy as np

n = 4
hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)


def f(a):
    return jnp.linalg.det(a)


args = (hilbert.astype(np.float32),)
