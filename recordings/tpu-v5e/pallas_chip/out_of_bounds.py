"""A bug, compiled for the TPU: x is 8x256 but the grid has 3 steps of 128 columns, so program 2's
index map returns block (0, 2) of x, which starts at column 256, outside x. Interpret mode clamps
the slice's start (program 2 reads x's last block again); compiled through Mosaic the chip's DMA
reads whatever lies past x. The output (8x384) is written whole. Recorded on a TPU v5e."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

INTERPRET = False


def add_one_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1


def f(x):
    return pl.pallas_call(
        add_one_kernel,
        grid=(3,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (0, i))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (0, i)),
        out_shape=jax.ShapeDtypeStruct((8, 384), jnp.float32),
        interpret=INTERPRET,
    )(x)


args = (np.arange(8 * 256, dtype=np.float32).reshape(8, 256),)
