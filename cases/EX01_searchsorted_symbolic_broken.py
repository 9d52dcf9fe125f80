"""Exporting a lookup with a symbolic number of bin edges: ``jnp.searchsorted`` over a sorted
array whose length is the dimension variable ``S``.

Report: jax-ml/jax#36766, "``jnp.searchsorted`` fails with symbolic shapes on the sorted
dimension during ``jax.export``" (https://github.com/jax-ml/jax/issues/36766); the same error
as jax-ml/jax#22489 (``jnp.digitize``). ``jnp.searchsorted`` checks the sorted array's length
against its index dtype while tracing (``int`` of the size), so that size must be a constant;
a symbolic length of the *queries* is fine, as the report says.
"""

import jax.numpy as jnp
import numpy as np


def f(edges, values):
    return jnp.searchsorted(edges, values)


args = (np.linspace(0.0, 1.0, 11, dtype=np.float32), np.array([0.05, 0.5, 0.93], np.float32))
shapes = ["(S,)", None]
