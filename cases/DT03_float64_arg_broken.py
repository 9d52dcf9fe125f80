"""A float64 numpy matrix passed to JAX with x64 off: JAX computes on its float32 rounding.

Report: jax-ml/jax#652, "controlling float precision?" (https://github.com/jax-ml/jax/issues/652):
"I am losing some precision with float32 and 64 conversions": a float64 numpy array handed to
JAX is canonicalized to float32 without a word (only an explicitly requested ``dtype=float64``
warns). The Hilbert matrix's entries 1/3, 1/6, ... are not float32 numbers.
"""

import jax.numpy as jnp
import numpy as np

n = 4
hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)  # numpy float64


def f(a):
    return jnp.linalg.det(a)


args = (hilbert,)
