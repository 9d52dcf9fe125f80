"""The private JAX facts ``jaxscope.internals.shard_map_checks`` relies on, one test each.

When JAX changes one of them (a helper renamed, a signature or message changed, the varying
axes moved off ``aval.mat``), this fails by name instead of the shard_map exhibit showing a
wrong check. Needs 8 CPU devices (``XLA_FLAGS`` is set below before JAX's backend starts).
"""

from __future__ import annotations

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()

import inspect
from typing import Any, get_args

import jax
import jax.numpy as jnp
import pytest
from jax._src import core, tree_util
from jax._src import shard_map as sm
from jax.sharding import AxisType, PartitionSpec
from jaxscope.internals import shard_map_checks as smc

from exhibits.shard_map import events as shard_map_events

P: Any = PartitionSpec  # untyped in jax
psum: Any = jax.lax.psum
pmean: Any = jax.lax.pmean


def _mesh() -> Any:
    if jax.device_count() < 8:
        pytest.skip("needs 8 devices (XLA_FLAGS set after JAX's backend started)")
    return jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def _params(fn: Any) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_check_helpers_exist_with_the_signatures_used() -> None:
    assert _params(sm._check_specs) == ["error_type", "specs", "manual_axes"]
    assert _params(sm._check_specs_vs_args) == [
        "f",
        "mesh",
        "in_tree",
        "in_specs",
        "dyn_argnums",
        "in_specs_flat",
        "xs",
    ]
    assert _params(sm._check_names) == ["specs", "avals"]
    assert _params(sm._check_mats) == ["mesh", "specs", "avals"]
    assert _params(sm._spec_rank_error) == ["error_type", "f", "tree", "specs", "fails"]
    assert _params(sm._inout_vma_error) == ["f", "mesh", "tree", "specs", "fails"]
    assert _params(sm._unmentioned) == ["mesh", "spec"]
    assert _params(sm._spec_to_names) == ["spec"]
    assert {e.name for e in sm.SpecErrorType} == {"input", "out"}
    assert issubclass(sm._SpecError, Exception) and issubclass(sm._RepError, Exception)
    assert repr(sm.no_fail) == "NoFail()"


def test_tree_util_helpers_used() -> None:
    for name in ("FlatTree", "broadcast_prefix", "prefix_errors", "generate_key_paths", "keystr"):
        assert hasattr(tree_util, name), name
    assert _params(tree_util.FlatTree.__init__)[:4] == ["self", "vals", "treedef", "statics"]
    e, *_ = tree_util.prefix_errors((P("x"), P()), (1,))
    assert "shard_map in_specs" in str(e("shard_map in_specs"))


def test_shard_map_wrapper_calls_the_helpers_we_call() -> None:
    src = inspect.getsource(sm._shard_map) + inspect.getsource(sm._shmap_checks)
    for call in (
        "_check_specs(SpecErrorType.input, in_specs, axis_names)",
        "_check_specs(SpecErrorType.out, out_specs, axis_names)",
        "broadcast_prefix(\n          in_specs, args, is_leaf=lambda x: x is None)",
        "e('shard_map in_specs')",
        "_check_specs_vs_args(f, mesh, in_tree, in_specs, dyn_argnums,",
        "e('shard_map out_specs')",
        "_inout_vma_error(f, mesh, out_tree, out_specs, fails)",
        "frozenset(mesh.axis_names) - core.get_axis_env().explicit_mesh_axis_names",
    ):
        assert call in src, call
    staging = inspect.getsource(sm._shard_map_staging)
    assert "_check_names(out_specs, out_avals_ft)" in staging
    assert "_check_mats(mesh, out_specs, out_avals_ft)" in staging


def test_varying_axes_live_on_aval_mat_varying() -> None:
    mesh = _mesh()
    seen: list[Any] = []

    def body(a: Any) -> Any:
        seen.append(jax.typeof(a))
        return psum(a, "y")

    closed = jax.make_jaxpr(
        jax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"),), out_specs=P("x", None))
    )(jnp.ones((8, 4)))
    (aval,) = seen
    assert isinstance(aval.mat, core.ManualAxisType)
    assert aval.mat.varying == frozenset({"x", "y"})
    assert not hasattr(aval, "vma")  # 0.10.2: no aval.vma
    assert aval.str_short(short_dtypes=True) == "f32[2,2]{V:(x,y)}"
    (eqn,) = closed.jaxpr.eqns
    assert eqn.primitive.name == "shard_map"
    assert {"jaxpr", "in_specs", "out_specs", "check_vma"} <= set(eqn.params)
    body_jaxpr = eqn.params["jaxpr"]
    assert isinstance(body_jaxpr, core.Jaxpr)
    assert smc.var_vma(body_jaxpr.outvars[0], mesh) == ["x"]
    assert [e.primitive.name for e in body_jaxpr.eqns] == ["psum_invariant"]
    assert body_jaxpr.eqns[0].params["axes"] == ("y",)


def test_collectives_are_lax_parallel_primitives_plus_pvary() -> None:
    names = {p.name for p in smc.parallel_primitives()}
    assert {"psum", "psum_invariant", "all_gather", "ppermute", "all_to_all", "pvary"} <= names
    assert core.pvary_p.name == "pvary"
    assert "reduce_sum" not in names


def test_lax_psum_binds_psum_invariant_under_check_vma() -> None:
    """The shard_map view's note (exhibits/shard_map/view-model.ts ``collectiveNote``) cites
    jax/_src/lax/parallel.py: ``_psum`` calls ``bind_psum_invariant`` (which binds
    ``psum_invariant_p``) when ``config._check_vma`` is on, plain ``psum_p`` when off;
    ``shard_map`` turns it on from ``check_vma``; ``pmean`` is a psum then a divide."""
    from jax._src import config
    from jax._src.lax import parallel

    psum_src = inspect.getsource(parallel._psum)
    assert "if config._check_vma.value:" in psum_src and "bind_psum_invariant(" in psum_src
    assert "psum_invariant_p" in inspect.getsource(parallel.bind_psum_invariant)
    assert parallel.psum_invariant_p.name == "psum_invariant" and parallel.psum_p.name == "psum"
    assert "x = psum(x" in inspect.getsource(parallel.pmean)
    mesh = _mesh()
    seen: list[bool] = []

    def body(a: Any) -> Any:
        seen.append(bool(config._check_vma.value))
        return psum(a, "y"), pmean(a, "y")

    for check_vma, prim in ((True, "psum_invariant"), (False, "psum")):
        fn = jax.shard_map(
            body,
            mesh=mesh,
            in_specs=(P("x", "y"),),
            out_specs=(P("x", None), P("x", None)),
            check_vma=check_vma,
        )
        closed = jax.make_jaxpr(fn)(jnp.ones((8, 4)))
        (eqn,) = [e for e in closed.eqns if e.primitive.name == "shard_map"]
        names = [e.primitive.name for e in eqn.params["jaxpr"].eqns]
        assert names.count(prim) == 2, names  # lax.psum's and lax.pmean's
        assert seen[-1] is check_vma


# (in_specs, out_specs, args, body) -> the check that fails; each helper's message must equal
# what jax.shard_map raises.
TABLE = [
    ((P("x", "z"),), P("x", "y"), (8, 4), lambda a: a, "unknown_axis"),
    ((P("x"), P()), P("x"), (8, 4), lambda a: a, "in_arity"),
    ((P("x", "y", None),), P("x", "y"), (8, 4), lambda a: a, "spec_rank"),
    ((P("x"),), P("x"), (6, 4), lambda a: a, "divisibility"),
    ((P("x", "y"),), (P("x", "y"), P()), (8, 4), lambda a: a, "out_arity"),
    ((P("x", "y"),), P("x", "y", None), (8, 4), lambda a: a, "out_rank"),
    ((P("x", "y"),), P("x", None), (8, 4), lambda a: a, "replication"),
    ((P("x", "y"),), P("x", None), (8, 4), lambda a: psum(a, "y"), None),
]


@pytest.mark.parametrize("row", TABLE, ids=lambda r: str(r[-1]))
def test_each_check_helper_says_what_jax_shard_map_says(row: tuple[Any, ...]) -> None:
    mesh = _mesh()
    in_specs, out_specs, shape, fn, expected = row
    args = (jnp.ones(shape),)
    seen = smc.BodyObserved()
    try:
        jax.make_jaxpr(
            jax.shard_map(
                smc.observing(fn, seen, mesh), mesh=mesh, in_specs=in_specs, out_specs=out_specs
            )
        )(*args)
    except ValueError:
        pass
    results = smc.all_checks(fn, mesh, in_specs, out_specs, args, seen, True)
    assert [r.name for r in results] == list(smc.CHECK_NAMES)
    failed = [r for r in results if r.status == "failed"]
    try:
        jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs))(*args)
    except ValueError as exc:
        assert [r.name for r in failed] == [expected]
        assert failed[0].message == str(exc)
        assert failed[0].error_class == "ValueError"
    else:
        assert expected is None and not failed


def test_the_records_speak_the_wires_words() -> None:
    """The checks return records (design 0059) whose ``specs`` and ``status`` words are the
    wire's, so that the shard_map probe's events accept them."""
    assert get_args(smc.SpecsName) == get_args(shard_map_events.SpecsName)
    assert get_args(smc.CheckStatus) == get_args(shard_map_events.CheckStatus)
