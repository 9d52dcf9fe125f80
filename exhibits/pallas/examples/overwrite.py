"""A bug: out_specs' index map forgot the program id, so both programs of the parallel grid
write output block 0, and no program writes block 1.

Program i reads block i of x but writes block 0 of the output. Interpret mode runs the grid in
order, so program 1's write replaces program 0's; on hardware the two instances of a parallel
grid axis may run at once and race. Elements 4..7 are never written.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def double_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


def f(x):
    return pl.pallas_call(
        double_kernel,
        grid=(2,),
        in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
        out_specs=pl.BlockSpec((4,), lambda i: (0,)),
        out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=True,
    )(x)


def reference(x):
    return x * 2


args = (np.arange(8, dtype=np.float32),)
