"""The private JAX facts ``jaxscope.internals.pallas_found`` relies on, one test each.

When JAX changes the shape of a ``pallas_call`` eqn's params (``grid_mapping`` renamed, a
``BlockMapping`` field moved, the kernel's invars reordered, a block dimension class renamed),
these fail by name instead of the pallas exhibit showing wrong blocks.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core
from jax._src.pallas import core as pallas_core
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jaxscope.internals import pallas_found

pallas_call: Any = pl.pallas_call  # untyped in jax
BlockSpec: Any = pl.BlockSpec
ShapeDtypeStruct: Any = jax.ShapeDtypeStruct


def _kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...][:, None] + y_ref[...]


def _f(x: Any, y: Any) -> Any:
    return pallas_call(
        _kernel,
        grid=(2, 3),
        in_specs=[
            BlockSpec((4, None), lambda i, j: (i, j)),
            BlockSpec((4, 1), lambda i, j: (i, j)),
        ],
        out_specs=BlockSpec((4, 1), lambda i, j: (i, j)),
        out_shape=ShapeDtypeStruct((8, 3), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        interpret=True,
    )(x, y)


def _eqn() -> core.JaxprEqn:
    x = jnp.ones((8, 3), jnp.float32)
    (eqn,) = jax.make_jaxpr(jax.jit(_f))(x, x).jaxpr.eqns[0].params["jaxpr"].eqns
    assert isinstance(eqn, core.JaxprEqn)
    return eqn


def test_pallas_call_eqn_params() -> None:
    eqn = _eqn()
    assert eqn.primitive.name == "pallas_call"
    for name in ("grid_mapping", "jaxpr", "compiler_params", "interpret", "input_output_aliases"):
        assert name in eqn.params, name
    gm = eqn.params["grid_mapping"]
    assert isinstance(gm, pallas_core.GridMapping)
    assert gm.grid == (2, 3)
    assert (gm.num_inputs, gm.num_outputs) == (2, 1)
    assert (gm.num_index_operands, gm.num_scratch_operands, gm.num_dynamic_grid_bounds) == (
        0,
        0,
        0,
    )
    assert len(gm.block_mappings) == 3  # inputs, then outputs


def test_block_mapping_fields() -> None:
    gm = _eqn().params["grid_mapping"]
    fields = {f.name for f in dataclasses.fields(pallas_core.BlockMapping)}
    assert {"block_shape", "index_map_jaxpr", "array_aval", "origin"} <= fields
    x, y, o = gm.block_mappings
    assert x.block_shape == (pallas_core.Blocked(4), pallas_core.Squeezed())
    assert y.block_shape == (pallas_core.Blocked(4), pallas_core.Blocked(1))
    assert str(x.block_shape[0]) == "Blocked(4)" and str(x.block_shape[1]) == "Squeezed()"
    assert x.array_aval.shape == (8, 3)
    assert (x.origin, o.origin) == ("args[0]", "outputs")
    # the index map: the grid indices in (int32[] each), one block index per dimension out
    assert isinstance(x.index_map_jaxpr, core.ClosedJaxpr)
    assert [str(a) for a in x.index_map_jaxpr.in_avals] == ["int32[]", "int32[]"]
    assert len(x.index_map_jaxpr.out_avals) == 2
    # Element's fields the reader checks
    assert {f.name for f in dataclasses.fields(pallas_core.Element)} == {"block_size", "padding"}


def test_kernel_jaxpr_invars_and_names() -> None:
    eqn = _eqn()
    kernel = eqn.params["jaxpr"]
    assert isinstance(kernel, core.Jaxpr)
    assert kernel.debug_info.arg_names == ("x_ref", "y_ref", "o_ref")
    assert kernel.debug_info.func_src_info.startswith("_kernel at ")
    # the refs in order inputs, outputs: block shapes with squeezed dimensions dropped
    shapes = [tuple(cast(Any, v.aval).shape) for v in kernel.invars]
    assert shapes == [(4,), (4, 1), (4, 1)]
    # reads and writes are get / swap eqns whose first operand is the ref
    names = [e.primitive.name for e in kernel.eqns]
    assert names[0] == "get" and names[-1] == "swap" and names.count("get") == 2
    assert kernel.eqns[-1].invars[0] is kernel.invars[2]


def test_compiler_params_dimension_semantics() -> None:
    params = _eqn().params["compiler_params"]
    sem = pallas_found._semantics(params)
    assert sem == ("parallel", "arbitrary")


def test_found_and_evaluated() -> None:
    x = jnp.ones((8, 3), jnp.float32)
    (call,) = pallas_found.find_pallas_calls(jax.make_jaxpr(jax.jit(_f))(x, x))
    assert call.grid == (2, 3) and call.within == ("jit(_f)",)
    assert call.dimension_semantics == ("parallel", "arbitrary")
    assert [op.name for op in call.operands] == ["x_ref", "y_ref", "o_ref"]
    ids = np.array(list(np.ndindex(2, 3)), dtype=np.int32)
    got = pallas_found.block_indices(call.operands[0], ids)
    # the user's index map, called directly
    assert got.tolist() == [[i, j] for i, j in np.ndindex(2, 3)]
    assert pallas_found.ref_effects(call.kernel, call.output_refs()[0]) == (True, False)
    assert str(call.kernel) == pallas_found.kernel_view(call).text
    assert all("Var(id=" not in e for e in pallas_found.kernel_view(call).effects)
