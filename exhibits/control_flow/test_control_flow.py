"""Tests of the control_flow exhibit: the carry verdicts, types and semantics against JAX itself.

Truths: the same snippet traced by plain ``jax.make_jaxpr`` (accept, or the error class and
message), ``jax.eval_shape`` of the body on the init (the body's exit types, computed by JAX
without the exhibit's observer), ``jax.typeof`` of the init leaves and
``tree_flatten_with_path`` (entry types and key paths), the staged eqn's params, the C13 case
expectations, closed forms (d/dx x**3 = 3x**2), ``jax.grad`` called directly, the golden files
(``golden/regen.py``), and the ``jaxscope`` CLI.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from jaxscope.protocol import JaxprStaged, StageStarted, StdoutPrinted

from exhibits.conftest import CASES, EXHIBITS, FakeContext, run_probe
from exhibits.control_flow.events import CarryChecked, ControlFlowShown
from exhibits.control_flow.golden.regen import EXAMPLES, golden, load
from exhibits.control_flow.probe import FORI_TRACED_SRC, builtin, hlo_op_counts
from testkit import run_cli

HERE = EXHIBITS / "control_flow"

PRELUDE = (
    "from typing import NamedTuple\nimport jax\nimport jax.numpy as jnp\nfrom jax import lax\n"
)

# Bodies: name -> snippet (defines f, args). Every one is traced by plain JAX and by the probe.
BODIES: dict[str, str] = {
    "scan_ok": """
        def f(xs):
            return lax.scan(lambda c, x: (c + x, c * 2), jnp.float32(0.0), xs)
        args = (jnp.arange(4.0),)
    """,
    "scan_dtype": """
        def f(xs):
            return lax.scan(lambda c, x: ((c[0] + 1.5, c[1] + x), None),
                            (jnp.int32(0), jnp.float32(0.0)), xs)
        args = (jnp.arange(4.0),)
    """,
    "scan_shape": """
        def f(xs):
            return lax.scan(lambda c, x: ({"h": jnp.concatenate([c["h"], x[None]])}, None),
                            {"h": jnp.zeros(2)}, xs)
        args = (jnp.arange(4.0),)
    """,
    "scan_structure": """
        def f(xs):
            return lax.scan(lambda c, x: ({"a": c["a"] + x, "b": x}, None), {"a": 0.0}, xs)
        args = (jnp.arange(4.0),)
    """,
    "scan_weak_int_promoted": """
        def f(xs):
            return lax.scan(lambda c, x: (c + x, None), 0, xs)
        args = (jnp.arange(4.0),)
    """,
    "scan_strong_int_rejected": """
        def f(xs):
            return lax.scan(lambda c, x: (c + x, None), jnp.int32(0), xs)
        args = (jnp.arange(4.0),)
    """,
    "scan_weak_float_kept": """
        def f(xs):
            return lax.scan(lambda c, x: (c * 0.5, None), 1.0, xs)
        args = (jnp.arange(4.0),)
    """,
    "while_ok": """
        def f(x):
            return lax.while_loop(lambda s: s[1] < 5, lambda s: (s[0] * x, s[1] + 1), (x, 0))
        args = (jnp.float32(1.1),)
    """,
    "while_dtype": """
        class S(NamedTuple):
            v: jax.Array
            i: jax.Array
        def f(x):
            return lax.while_loop(lambda s: s.i < 5, lambda s: S(s.v * x, s.i + 0.5),
                                  S(x, jnp.int32(0)))
        args = (jnp.float32(1.1),)
    """,
    "fori_static_ok": """
        def f(x):
            return lax.fori_loop(0, 3, lambda i, c: c * x, jnp.float32(1.0))
        args = (jnp.float32(2.0),)
    """,
    "fori_static_dtype": """
        def f(x):
            return lax.fori_loop(0, 3, lambda i, c: c * x, jnp.int32(1))
        args = (jnp.float32(2.0),)
    """,
    "fori_traced_dtype": """
        def f(x, n):
            return lax.fori_loop(0, n, lambda i, c: c * x, jnp.int32(1))
        args = (jnp.float32(2.0), jnp.int32(3))
    """,
    "cond_ok": """
        def f(x):
            return lax.cond(x > 0, lambda v: (v, v * 2), lambda v: (-v, v), x)
        args = (jnp.float32(1.0),)
    """,
    "cond_shape": """
        def f(x):
            return lax.cond(x[0] > 0, lambda v: v, lambda v: v[:2], x)
        args = (jnp.arange(3.0),)
    """,
    "switch_ok": """
        def f(i, x):
            return lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x)
        args = (jnp.int32(1), jnp.float32(0.3))
    """,
    "switch_third_branch": """
        def f(i, x):
            return lax.switch(i, [jnp.sin, jnp.cos, lambda v: v.astype(jnp.float16)], x)
        args = (jnp.int32(1), jnp.float32(0.3))
    """,
    "nested_scan": """
        def inner(c, x):
            return c + x, None
        def outer(c, row):
            c2, _ = lax.scan(inner, c, row)
            return c2, None
        def f(xs):
            return lax.scan(outer, jnp.float32(0.0), xs)
        args = (jnp.ones((3, 4)),)
    """,
}


def snippet(name: str) -> str:
    return PRELUDE + textwrap.dedent(BODIES[name])


def plain_outcome(source: str) -> tuple[bool, str | None, str | None]:
    """``(ok, error_class, message)`` of plain ``jax.make_jaxpr(f)(*args)`` on ``source``."""
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(source, "<snippet>", "exec"), ns)
    try:
        jax.make_jaxpr(ns["f"])(*ns["args"])
    except Exception as exc:
        return False, type(exc).__name__, str(exc)
    return True, None, None


def checks(ctx: FakeContext) -> list[CarryChecked]:
    return ctx.of_type(CarryChecked)


@pytest.mark.parametrize("name", sorted(BODIES))
def test_verdict_equals_jax(name: str) -> None:
    source = snippet(name)
    ok, error_class, message = plain_outcome(source)
    ctx = run_probe("control_flow", source)
    found = checks(ctx)
    assert found, "no check observed"
    failing = [c for c in found if not c.ok]
    assert (not failing) == ok
    if not ok:
        (bad,) = failing
        assert bad.error_class == error_class and bad.message == message
        assert bad.leaf_path is not None
        # JAX's message names the differing leaf: 'component <name><path>' or 'at path <path>'
        if bad.leaf_path:
            assert bad.leaf_path in (bad.message or "")
        assert not ctx.of_type(JaxprStaged)
    else:
        assert ctx.one(JaxprStaged)


def test_expected_verdicts_of_the_table() -> None:
    """The table covers both outcomes on purpose (a guard against a table that all passes)."""
    expect_ok = {
        "scan_ok",
        "scan_weak_int_promoted",
        "scan_weak_float_kept",
        "while_ok",
        "fori_static_ok",
        "cond_ok",
        "switch_ok",
        "nested_scan",
    }
    for name in BODIES:
        assert plain_outcome(snippet(name))[0] == (name in expect_ok), name


def test_scan_types_equal_eval_shape_of_the_body() -> None:
    source = snippet("scan_dtype")
    (c,) = checks(run_probe("control_flow", source))
    init = (jnp.int32(0), jnp.float32(0.0))
    body = lambda c, x: ((c[0] + 1.5, c[1] + x), None)  # noqa: E731  (the snippet's body)
    carry_out, _ = jax.eval_shape(body, init, jnp.float32(1.0))
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(init)[0]]
    assert c.leaf_paths == paths == ["[0]", "[1]"]
    assert c.columns == ["carry in", "carry out"]
    for leaf, x, y in zip(c.leaves, jax.tree.leaves(init), jax.tree.leaves(carry_out), strict=True):
        entry, exit_ = leaf.types
        assert entry is not None and exit_ is not None
        assert (entry.shape, entry.dtype, entry.weak_type) == ([], x.dtype.name, False)
        assert (exit_.shape, exit_.dtype, exit_.weak_type) == (
            list(y.shape),
            y.dtype.name,
            jax.typeof(y).weak_type,
        )
    assert c.leaf_path == "[0]" and [lf.matches for lf in c.leaves] == [False, True]


def test_weak_int_carry_promoted_as_jax_stages_it() -> None:
    ctx = run_probe("control_flow", snippet("scan_weak_int_promoted"))
    (c,) = checks(ctx)
    assert c.ok and c.columns == ["init", "carry in", "carry out"]
    (leaf,) = c.leaves
    init, cin, cout = leaf.types
    assert init is not None and cin is not None and cout is not None
    assert jax.typeof(0).weak_type and (init.dtype, init.weak_type) == (
        jax.typeof(jnp.asarray(0)).dtype.name,
        True,
    )
    assert leaf.promoted and (cin.short, cout.short) == ("f32[]", "f32[]")
    closed = jax.make_jaxpr(lambda xs: lax.scan(lambda c, x: (c + x, None), 0, xs))(jnp.arange(4.0))
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
    assert c.eqn_carry_in == [str(eqn.params["jaxpr"].in_avals[0].str_short(short_dtypes=True))]
    # no promotion when the weak float init already matches
    (kept,) = checks(run_probe("control_flow", snippet("scan_weak_float_kept")))
    assert kept.columns == ["carry in", "carry out"] and not kept.leaves[0].promoted


def test_fori_flags_and_switch_columns() -> None:
    (static,) = checks(run_probe("control_flow", snippet("fori_static_ok")))
    assert static.fori and static.primitive == "scan" and static.length == 3
    (traced,) = checks(run_probe("control_flow", snippet("fori_traced_dtype")))
    assert traced.fori and traced.primitive == "while" and not traced.ok
    (sw,) = checks(run_probe("control_flow", snippet("switch_third_branch")))
    assert sw.columns == ["branch 0", "branch1", "branch2"] and not sw.ok
    third = sw.leaves[0].types[2]
    assert third is not None and third.dtype == "float16"
    (ok,) = checks(run_probe("control_flow", snippet("switch_ok")))
    assert ok.ok and len(ok.branch_out) == 3


def test_nested_scan_both_checks() -> None:
    ctx = run_probe("control_flow", snippet("nested_scan"))
    inner, outer = checks(ctx)
    assert inner.source is not None and outer.source is not None
    assert (inner.source.function, outer.source.function) == ("outer", "f")
    assert inner.eqn_index == outer.eqn_index == 0


# --------------------------------------------------------------------------------------------
# C13


def nonblank(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def case(name: str) -> tuple[str, dict[str, Any]]:
    source = (CASES / f"{name}.py").read_text()
    expect = json.loads((CASES / f"{name}.expect.json").read_text())
    return source, expect


@pytest.mark.parametrize("name", ["C13_cond_dtype_broken", "C13_scan_carry_broken"])
def test_c13_broken(name: str) -> None:
    source, expect = case(name)
    (c,) = checks(run_probe("control_flow", source))
    assert not c.ok and c.error_class == expect["error_class"]
    # the case files name the snippet by its file and drop blank lines
    message = (c.message or "").replace("<snippet>", expect["snippet"])
    assert nonblank(message) == nonblank(expect["error_message"])
    assert c.source is not None and c.source.line == expect["error_user_line"]
    if name == "C13_scan_carry_broken":
        assert c.leaf_path == ".n_pos"
    else:
        assert c.leaf_path == "" and c.columns == ["true_fun", "false_fun"]


@pytest.mark.parametrize(
    "name", ["C13_cond_dtype_fixed", "C13_scan_carry_fixed", "C13_weak_carry_broken"]
)
def test_c13_accepted(name: str) -> None:
    source, expect = case(name)
    ctx = run_probe("control_flow", source)
    (c,) = checks(ctx)
    assert c.ok and ctx.one(JaxprStaged).jaxpr.text == expect["jaxpr"]
    carry = expect["carry"]
    assert c.primitive == carry["primitive"]
    if carry["primitive"] == "cond":
        assert c.branch_out == carry["branch_out"]
    else:
        assert (c.eqn_carry_in, c.eqn_carry_out, c.length) == (
            carry["carry_in"],
            carry["carry_out"],
            carry["length"],
        )
    if name == "C13_weak_carry_broken":  # silently promoted: the int counter comes back f32
        n_pos = next(lf for lf in c.leaves if lf.path == ".n_pos")
        assert n_pos.promoted and expect["out_dtype"]["n_pos"] == "float32"
        assert [t.short if t else None for t in n_pos.types] == ["i32[]", "f32[]", "f32[]"]
        assert n_pos.types[0] is not None and n_pos.types[0].weak_type


# --------------------------------------------------------------------------------------------
# Stages, semantics, examples, CLI


def test_body_traced_once_prints_in_trace_stage_only() -> None:
    ctx = run_probe("control_flow", (HERE / "examples" / "scan_carry.py").read_text())
    printed = ctx.of_type(StdoutPrinted)
    assert [(p.stage, p.text) for p in printed] == [("trace", "tracing step\n")]
    (c,) = checks(ctx)
    assert c.length == 8 and [s.stage for s in ctx.of_type(StageStarted)] == [
        "trace",
        "run",
        "compile",
    ]


@pytest.fixture(scope="module")
def shown() -> dict[str, list[ControlFlowShown]]:
    ctx = run_probe("control_flow", (CASES / "C13_cond_dtype_fixed.py").read_text())
    out: dict[str, list[ControlFlowShown]] = {}
    for e in ctx.of_type(ControlFlowShown):
        out.setdefault(e.topic, []).append(e)
    return out


def test_semantics_claims_hold_in_their_jaxprs(shown: dict[str, list[ControlFlowShown]]) -> None:
    assert all(e.holds for es in shown.values() for e in es)
    (both,) = shown["cond_traces_both"]
    assert both.jaxpr is not None and "sin" in both.jaxpr.text and "cos" in both.jaxpr.text
    builtin_vmap, user_vmap = shown["cond_vmap_select"]
    for e in (builtin_vmap, user_vmap):
        assert e.jaxpr is not None
        assert "select_n" in e.jaxpr.text and "cond[" not in e.jaxpr.text
    assert user_vmap.on_user_code and not builtin_vmap.on_user_code
    (static,) = shown["fori_static_scan"]
    assert static.jaxpr is not None and "scan[" in static.jaxpr.text
    assert "while[" not in static.jaxpr.text
    x = static.figures["x"]
    assert static.figures["grad"] == pytest.approx(3 * x**2)  # d/dx x**3
    (traced,) = shown["fori_traced_while"]
    assert traced.jaxpr is not None and "while[" in traced.jaxpr.text
    assert traced.figures["jvp"] == pytest.approx(3 * traced.figures["x"] ** 2)
    fn = builtin(FORI_TRACED_SRC)
    with pytest.raises(Exception) as info:
        jax.grad(jax.jit(fn))(2.0, 3)
    assert traced.error_class == type(info.value).__name__ == "ValueError"
    assert traced.message == str(info.value) and "Reverse-mode" in traced.message


def test_unroll_changes_the_compiled_hlo(shown: dict[str, list[ControlFlowShown]]) -> None:
    (e,) = shown["unroll_hlo"]
    assert e.jaxpr is not None and "unroll=4" in e.jaxpr.text
    f = figures = e.figures
    assert f["unroll_1_sine"] == 1 and f["unroll_4_sine"] >= 4
    assert f["unroll_4_ops"] > f["unroll_1_ops"]

    def body(c: Any, x: Any) -> Any:
        c = jnp.sin(c) * x + c
        return c, c

    for u in (1, 4):
        text = (
            jax.jit(lambda c, xs, u=u: lax.scan(body, c, xs, unroll=u))
            .lower(jnp.float32(0.5), jnp.zeros(16, jnp.float32))
            .compile()
            .as_text()
        )
        assert text is not None
        assert figures[f"unroll_{u}_sine"] == len(re.findall(r"\bsine\(", text))
        assert figures[f"unroll_{u}_ops"] == sum(hlo_op_counts(text).values())
        # the body's copies: XLA's text separates computations by blank lines; the one with the
        # most sine instructions holds the unrolled body, u copies
        per_block = [len(re.findall(r"\bsine\(", block)) for block in text.split("\n\n")]
        assert figures[f"unroll_{u}_sine_fused"] == max(per_block) == u
    assert e.holds and "4 sine instructions" in e.claim


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_match_golden(path: Path) -> None:
    want = json.loads((HERE / "golden" / f"{path.stem}.json").read_text())
    assert golden(path) == want  # the golden file is JAX's current answer
    ctx = run_probe("control_flow", path.read_text())
    found = checks(ctx)
    failing = [c for c in found if not c.ok]
    assert (not failing) == want["ok"]
    if not want["ok"]:
        assert failing[0].message == want["message"]
        return
    assert ctx.one(JaxprStaged).jaxpr.text == want["jaxpr"]
    carry = want.get("carry")
    if carry is not None and carry["primitive"] != "cond":
        assert (found[0].eqn_carry_in, found[0].eqn_carry_out) == (
            carry["carry_in"],
            carry["carry_out"],
        )
    elif carry is not None:
        assert found[0].branch_out == carry["branch_out"]


def test_default_example_exists() -> None:
    from exhibits.registry import EXHIBITS as REGISTRY

    assert REGISTRY["control_flow"].default_example in {p.stem for p in EXAMPLES}
    assert load(HERE / "examples" / "scan_carry.py")["f"] is not None


def jaxscope(*argv: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*argv)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("C13_scan_carry_broken", {"ok": False, "error_class": "TypeError", "leaf_path": ".n_pos"}),
        ("C13_cond_dtype_broken", {"ok": False, "error_class": "TypeError", "leaf_path": ""}),
        ("C13_weak_carry_broken", {"ok": True, "error_class": None, "leaf_path": None}),
    ],
)
def test_cli_verdict(name: str, want: dict[str, Any]) -> None:
    ok, error_class, message = plain_outcome((CASES / f"{name}.py").read_text())
    assert (ok, error_class) == (want["ok"], want["error_class"])  # JAX's own outcome
    out = jaxscope("run", "control_flow", str(CASES / f"{name}.py"), "--print", "verdict")
    # JAX's rejection is the lesson (the run finishes) and exits 3: JAX rejected the code.
    assert out.returncode == (0 if ok else 3), out.stderr
    verdict = json.loads(out.stdout)
    assert {k: verdict[k] for k in ("ok", "error_class", "leaf_path")} == want
    if not ok:
        expect = json.loads((CASES / f"{name}.expect.json").read_text())
        assert verdict["line"] == expect["error_user_line"]
        assert message is not None
        assert verdict["message"].splitlines()[0] == message.splitlines()[0]
        assert message.splitlines()[0] == expect["error_first_line"]
        assert f"JAX raised {error_class} at line {verdict['line']}" in out.stderr


NO_CONTROL_FLOW = """\
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * 2.0


args = (1.0,)
"""

ENDLESS = """\
import jax.numpy as jnp
from jax import lax


def f(x):
    y = x * 2.0
    return lax.while_loop(lambda c: c > -1.0, lambda c: c + 1.0, y)


args = (jnp.float32(0.0),)
"""


def test_cli_verdict_without_control_flow(tmp_path: Path) -> None:
    path = tmp_path / "plain.py"
    path.write_text(NO_CONTROL_FLOW)
    out = jaxscope("run", "control_flow", str(path), "--print", "verdict")
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert {k: verdict[k] for k in ("ok", "error_class", "leaf_path")} == {
        "ok": True,
        "error_class": None,
        "leaf_path": None,
    }
    assert "no carry or branch types to check" in verdict["note"]


def test_endless_while_loop_timeout_names_the_loop_line(tmp_path: Path) -> None:
    """The loop runs inside XLA, after f returned: the runner's stack dump still finds line 7."""
    path = tmp_path / "endless.py"
    path.write_text(ENDLESS)
    out = jaxscope("run", "control_flow", str(path), "--timeout", "2", "--json")
    assert out.returncode != 0
    events = [json.loads(line) for line in out.stdout.splitlines()]
    failed = events[-1]
    assert failed["type"] == "run_failed" and failed["kind"] == "timeout"
    loop_line = (
        ENDLESS.splitlines().index(
            "    return lax.while_loop(lambda c: c > -1.0, lambda c: c + 1.0, y)"
        )
        + 1
    )
    assert failed["source"]["line"] == loop_line == 7
    assert failed["source"]["function"] == "f"
    assert f"line {loop_line}, in f" in failed["message"]
