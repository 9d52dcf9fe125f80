"""Exporting a running total written as a Python loop over a symbolic batch.

Report: jax-ml/jax#22489, "jax.numpy.digitize doesn't work with shape polymorphism"
(https://github.com/jax-ml/jax/issues/22489): "TypeError: '_DimExpr' object cannot be
interpreted as an integer", Python's error when a symbolic dimension reaches ``range``/``len``
(there inside ``jnp.digitize``, here in the user's own loop). A Python loop unrolls at trace
time, so it needs the trip count as a concrete ``int``.
"""

import numpy as np


def f(x):
    total = x[0] * 0.0
    for i in range(x.shape[0]):
        total = total + x[i]
    return total


args = (np.arange(12, dtype=np.float32).reshape(4, 3),)
shapes = ["(b, 3)"]
