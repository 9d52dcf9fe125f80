"""The private JAX facts ``jaxscope.internals.pallas_mosaic`` relies on (design 0073), on the CPU:
lowering for platform ``tpu`` needs no libtpu and no chip. When JAX changes how a ``pallas_call``
reaches the TPU (the ``tpu_custom_call`` config's fields, the bytecode's serde pass, the kernel
function's attributes, the ops' locations), these fail by name.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax._src import core
from jaxscope.internals import pallas_mosaic
from jaxscope.snippet_model import SNIPPET_FILENAME

SOURCE = """
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def kernel(s_ref, x_ref, o_ref):
    o_ref[...] = x_ref[...] * s_ref[0]


@jax.jit
def f(s, x):
    return pl.pallas_call(
        kernel,
        grid=(2,),
        in_specs=[
            pl.BlockSpec(memory_space=pltpu.SMEM),
            pl.BlockSpec((8, 128), lambda i: (0, i)),
        ],
        out_specs=pl.BlockSpec((8, 128), lambda i: (0, i)),
        out_shape=jax.ShapeDtypeStruct((8, 256), jnp.float32),
        interpret=True,
    )(s, x)
"""
ShapeDtypeStruct: Any = jax.ShapeDtypeStruct  # untyped in jax
ARGS = (np.full((1,), 3, np.float32), np.arange(8 * 256, dtype=np.float32).reshape(8, 256))


def _closed() -> core.ClosedJaxpr:
    ns: dict[str, Any] = {}
    exec(compile(SOURCE, SNIPPET_FILENAME, "exec"), ns)
    closed: core.ClosedJaxpr = jax.make_jaxpr(ns["f"])(*ARGS)
    return closed


def _pallas_eqn(closed: core.ClosedJaxpr) -> core.JaxprEqn:
    (inner,) = core.jaxprs_in_params(closed.jaxpr.eqns[0].params)
    (eqn,) = [e for e in inner.eqns if e.primitive.name == "pallas_call"]
    return eqn


def test_interpret_is_set_inside_jit_and_the_jaxpr_still_runs() -> None:
    closed = _closed()
    off, avals = pallas_mosaic.compiled_fun(closed)
    on, _ = pallas_mosaic.compiled_fun(closed, interpret=True)
    assert _pallas_eqn(closed).params["interpret"] is True  # the original is left as it was
    assert [(a.shape, a.dtype) for a in avals] == [(a.shape, a.dtype) for a in ARGS]
    (out,) = on(*ARGS)
    np.testing.assert_array_equal(np.asarray(out), ARGS[1] * 3)
    staged = jax.make_jaxpr(off)(*ARGS)
    assert _pallas_eqn(staged).params["interpret"] is False


def test_the_mosaic_module_read_back_from_a_tpu_lowering() -> None:
    fun, avals = pallas_mosaic.compiled_fun(_closed())
    lowered = (
        jax.jit(fun)
        .trace(*[ShapeDtypeStruct(a.shape, a.dtype) for a in avals])
        .lower(lowering_platforms=("tpu",))
    )
    assert "tpu_custom_call" in lowered.as_text()
    (k,) = pallas_mosaic.mosaic_kernels(lowered)
    assert k.name == "kernel" and k.grid == (2,) and k.dimension_semantics == ("arbitrary",)
    assert [(w.block, w.memory_space) for w in k.windows] == [
        ((1,), "smem"),
        ((8, 128), "vmem"),
        ((8, 128), "vmem"),
    ]
    assert "custom_call_config" not in k.config and "body" not in k.config
    lines = SOURCE.splitlines()
    kernel_line = next(i + 1 for i, t in enumerate(lines) if "s_ref[0]" in t)
    ops = {(o.name, o.primitive, o.line) for o in k.ops}
    assert ("arith.mulf", "mul", kernel_line) in ops and ("memref.load", "get", kernel_line) in ops
    assert ("tpu.vector_store", "swap", kernel_line) in ops
    assert k.call_line == next(i + 1 for i, t in enumerate(lines) if "pl.pallas_call(" in t)
    assert "func.func @kernel(" in k.text and "#tpu.memory_space<smem>" in k.text


def test_an_index_maps_line() -> None:
    eqn = _pallas_eqn(_closed())
    maps = [bm.index_map_jaxpr for bm in eqn.params["grid_mapping"].block_mappings]
    lines = SOURCE.splitlines()
    spec_line = next(i + 1 for i, t in enumerate(lines) if "pl.BlockSpec((8, 128)" in t)
    assert pallas_mosaic.index_map_line(maps[1]) == spec_line
