"""A bug, compiled for the TPU: out_specs' index map forgot the program id, so both programs of
the parallel grid write output block (0, 0) and none writes block (0, 1). A TPU v5e has one
TensorCore, which runs a parallel axis in order: the last writer's block lands, as in interpret
mode; the unwritten block holds whatever the output's buffer held (interpret mode: NaN).
Recorded on a TPU v5e."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

INTERPRET = False


def double_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


def f(x):
    return pl.pallas_call(
        double_kernel,
        grid=(2,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (0, i))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (0, 0)),
        out_shape=jax.ShapeDtypeStruct((8, 256), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=INTERPRET,
    )(x)


def reference(x):
    return x * 2


args = (np.arange(8 * 256, dtype=np.float32).reshape(8, 256),)
