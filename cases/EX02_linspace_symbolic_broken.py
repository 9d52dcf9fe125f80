"""Exporting a position ramp over a symbolic sequence length: ``jnp.linspace(0, 1, x.shape[0])``.

Report: jax-ml/jax#22405, "[shape_poly] Expand the support for shape polymorphism for jnp.pad"
(https://github.com/jax-ml/jax/pull/22405), which added symbolic sizes to ``jnp.linspace``:
its step is ``1 / (num - 1)``, so it asks whether ``num > 1``; for a dimension variable ``T``
(at least 1, as every dimension variable) that is true for some values and false for ``T = 1``.
The JAX docs' "Comparison of symbolic dimensions is partially supported" gives the cure, a
constraint; jax2onnx#210 exports with ``constraints=("N >= 2",)`` for the same reason.
"""

import jax.numpy as jnp
import numpy as np


def f(x):
    ramp = jnp.linspace(0.0, 1.0, x.shape[0])
    return x * ramp[:, None]


args = (np.ones((6, 3), np.float32),)
shapes = ["(T, 3)"]
