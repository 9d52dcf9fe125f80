"""Contract tests: every private JAX name ``jaxscope.internals.control_flow`` relies on still exists
and behaves as assumed in jax 0.10.2. A JAX upgrade that changes one of them fails here, loudly,
before the control_flow exhibit silently stops observing JAX's checks."""

from __future__ import annotations

import inspect
import weakref
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jax._src import core
from jax._src import tree_util as _jtu
from jax._src.lax.control_flow import conditionals as _conditionals
from jax._src.lax.control_flow import loops as _loops
from jaxscope.internals.control_flow import (
    carry_avals,
    fori_user_body,
    iter_eqns,
    observe_control_flow,
)

# JAX's private modules are untyped: read them as Any (this file is mypy strict).
loops: Any = _loops
conditionals: Any = _conditionals
jtu: Any = _jtu


def test_check_functions_signatures() -> None:
    assert list(inspect.signature(loops._check_carry_type).parameters) == [
        "name",
        "body_fun",
        "in_carry",
        "out_carry",
    ]
    assert list(inspect.signature(loops._promote_weak_typed_input).parameters) == [
        "in_val",
        "in_aval",
        "out_aval",
    ]
    assert list(inspect.signature(conditionals._check_branch_outputs).parameters) == [
        "api_name",
        "name1",
        "name2",
        "f1",
        "f2",
        "out_avals1",
        "out_avals2",
    ]


def test_callers_look_the_checks_up_as_module_globals() -> None:
    scan_src = inspect.getsource(loops.scan)
    assert "_check_carry_type('scan body', f, init_avals, carry_out_avals)" in scan_src
    assert "_promote_weak_typed_input," in scan_src and "config.scan3.value" in scan_src
    while_src = inspect.getsource(loops.while_loop)
    assert "_check_carry_type('while_loop body', body_fun, init_aval, body_out_avals)" in (
        while_src
    )
    assert "_promote_weak_typed_input," in while_src
    cond_src = inspect.getsource(conditionals.cond)
    assert "_check_branch_outputs(\n      'cond', 'true_fun', 'false_fun'," in cond_src
    switch_src = inspect.getsource(conditionals._switch_internal)
    assert '"switch", "branch 0", f"branch{i+1}"' in switch_src
    assert not loops.config.scan3.value  # scan3 (a different scan, unobserved) is off


def test_flat_tree_api_used() -> None:
    ft = jtu.FlatTree.flatten({"b": 1.0, "a": (2.0, 3.0)})
    assert [jtu.keystr(p) for p in ft.paths] == ["['a'][0]", "['a'][1]", "['b']"]
    assert isinstance(ft.tree, jax.tree_util.PyTreeDef) and len(ft.vals) == 3
    assert ft.unflatten() == {"b": 1.0, "a": (2.0, 3.0)}
    assert list(ft) == list(ft.vals)
    diffs = list(jtu.equality_errors({"a": 1}, {"a": 1, "b": 2}))
    assert diffs and isinstance(diffs[0][0], tuple)
    f32, i32 = core.ShapedArray((), jnp.float32), core.ShapedArray((), jnp.int32)
    assert core.typematch(f32, f32) and not core.typematch(f32, i32)
    weak = core.ShapedArray((), jnp.float32, weak_type=True)
    assert core.typematch(f32, weak)  # weak type is ignored by JAX's carry check


def test_eqn_params_read() -> None:
    def f(xs: Any) -> Any:
        c, _ = lax.scan(lambda c, x: (c + x, None), jnp.float32(0), xs)
        w = lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0)
        return lax.cond(c > 0, jnp.sin, jnp.cos, c), w

    closed = jax.make_jaxpr(f)(jnp.ones(3))
    by_name = {e.primitive.name: e for _, e in iter_eqns(closed.jaxpr)}
    scan, wh, cond = by_name["scan"], by_name["while"], by_name["cond"]
    assert {"jaxpr", "num_consts", "num_carry", "length"} <= set(scan.params)
    assert {"body_jaxpr", "body_nconsts", "cond_jaxpr"} <= set(wh.params)
    assert len(cond.params["branches"]) == 2
    assert [str(a.str_short()) for a in carry_avals(scan)[0]] == ["float32[]"]
    assert len(carry_avals(wh)[0]) == 1
    assert list(core.jaxprs_in_params(scan.params))


def test_fori_wrappers_hold_the_user_body() -> None:
    def body(i: Any, c: Any) -> Any:
        return c + i

    dbg = jax._src.api_util.debug_info("fori_loop", body, (0, 0), {})
    scanned = loops._fori_scan_body_fun(body, dbg)
    assert scanned.__qualname__.startswith("_fori_") and fori_user_body(scanned) is body
    cells = [c.cell_contents for c in scanned.__closure__ or ()]
    assert any(isinstance(c, weakref.ref) for c in cells)
    assert loops._fori_body_fun(body, dbg).__qualname__.startswith("_fori_")
    assert fori_user_body(body) is None


def test_observer_sees_checks_and_restores() -> None:
    originals = (
        loops._check_carry_type,
        loops._promote_weak_typed_input,
        conditionals._check_branch_outputs,
    )
    with observe_control_flow() as records:
        jax.make_jaxpr(lambda xs: lax.scan(lambda c, x: (c + x, None), 0, xs))(jnp.ones(2))
        with pytest.raises(TypeError, match="cond branches must have equal output types"):
            jax.make_jaxpr(lambda x: lax.cond(x > 0, lambda v: v, lambda v: v.astype(int), x))(1.0)
    assert (
        loops._check_carry_type,
        loops._promote_weak_typed_input,
        conditionals._check_branch_outputs,
    ) == originals
    scan, cond = records
    assert scan.api == "scan body" and scan.promoted == [True] and scan.error is None
    assert cond.api == "cond" and isinstance(cond.error, TypeError)
