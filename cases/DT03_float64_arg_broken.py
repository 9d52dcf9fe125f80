"""A float64 numpy matrix passed to JAX with x64 off: JAX computes on its float32 rounding.

Report: jax-ml/jax#652, "controlling float precision?" (https://github.com/jax-ml/jax/issues/652):
"I am losing some precision with float32 and 64 conversions": a float64 numpy array handed to
JAX is canonicalized to float32 without a word (only an explicitly requested ``dtype=float64``
warns). The Hilbert matrix's entries 1/3, 1/6, ... are not float32 numbers.

jaxscope says this as a note, not a finding (exit 0): each entry is rounded to the nearest
float32, within 2**-24 of its value, which is what JAX documents for x64 off. What the reporter
lost is the conditioning of the matrix amplifying float32's precision, not a corrupted input;
only values a 32-bit copy corrupts (overflow, underflow, whole numbers, wrapped integers: DT04)
are findings (docs/design/0024-findings.md).
"""

import jax.numpy as jnp
import numpy as np

n = 4
hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)  # numpy float64


def f(a):
    return jnp.linalg.det(a)


args = (hilbert,)
