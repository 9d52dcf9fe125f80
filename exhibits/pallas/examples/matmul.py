"""A tiled matmul with Pallas in interpret mode: a 2-D grid, one output block per program.

x is 8x8, y 8x12. Program (i, j) reads row block i of x (all 8 columns) and column
block j of y (all 8 rows), and writes block (i, j) of the 8x12 output. interpret=True runs
the kernel on the CPU with JAX's own ops, one grid point after another.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl


def matmul_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] @ y_ref[...]


def f(x, y):
    return pl.pallas_call(
        matmul_kernel,
        grid=(2, 3),
        in_specs=[
            pl.BlockSpec((4, 8), lambda i, j: (i, 0)),
            pl.BlockSpec((8, 4), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((4, 4), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((8, 12), jnp.float32),
        interpret=True,
    )(x, y)


def reference(x, y):
    return jnp.matmul(x, y)


args = (
    np.arange(64, dtype=np.float32).reshape(8, 8) / 8,
    np.linspace(-1, 1, 96, dtype=np.float32).reshape(8, 12),
)
