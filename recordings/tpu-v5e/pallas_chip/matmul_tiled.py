"""The pallas exhibit's matmul with blocks a TPU can tile, compiled through Mosaic
(``interpret=INTERPRET``, False): x 256x512, y 512x384, program (i, j) multiplies row block i of
x (128x512) by column block j of y (512x128) into block (i, j) of the output. The default example
(blocks of 4x8, 8x4) is refused by Pallas's TPU lowering: the last two block dimensions must be
multiples of 8 and 128 or the array's own. Recorded on a TPU v5e (design 0073)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

INTERPRET = False


def matmul_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] @ y_ref[...]


def f(x, y):
    return pl.pallas_call(
        matmul_kernel,
        grid=(2, 3),
        in_specs=[
            pl.BlockSpec((128, 512), lambda i, j: (i, 0)),
            pl.BlockSpec((512, 128), lambda i, j: (0, j)),
        ],
        out_specs=pl.BlockSpec((128, 128), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((256, 384), jnp.float32),
        interpret=INTERPRET,
    )(x, y)


def reference(x, y):
    return jnp.matmul(x, y)


args = (
    np.linspace(-1, 1, 256 * 512, dtype=np.float32).reshape(256, 512),
    np.cos(np.arange(512 * 384, dtype=np.float32)).reshape(512, 384),
)
