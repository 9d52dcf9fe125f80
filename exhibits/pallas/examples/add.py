"""An elementwise add with a 1-D grid: program i reads block i of x and of y and writes
block i of the output. The last block is partial (10 elements in blocks of 4): Pallas runs
it on a padded block and writes back only the 2 elements inside the array."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def f(x, y):
    return pl.pallas_call(
        add_kernel,
        grid=(3,),
        in_specs=[pl.BlockSpec((4,), lambda i: (i,)), pl.BlockSpec((4,), lambda i: (i,))],
        out_specs=pl.BlockSpec((4,), lambda i: (i,)),
        out_shape=jax.ShapeDtypeStruct((10,), jnp.float32),
        interpret=True,
    )(x, y)


def reference(x, y):
    return x + y


args = (np.arange(10, dtype=np.float32), np.full(10, 0.5, dtype=np.float32))
