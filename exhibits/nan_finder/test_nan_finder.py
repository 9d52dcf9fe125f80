"""Tests of the nan_finder exhibit: every artefact against JAX itself.

The probe runs in-process (``exhibits/conftest.py``). The truths: ``jax.grad`` on a separately
loaded copy of each snippet, numpy, the shared case C22 (``cases/C22_*.expect.json``)
and the goldens computed by ``golden/regen.py`` from plain JAX.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.protocol import StageStarted
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, EXHIBITS, FakeContext, example_sources, run_probe
from exhibits.nan_finder.cure import double_where
from exhibits.nan_finder.events import NonfiniteFound
from exhibits.nan_finder.fixtures.capture import (
    BWD_WRONG_STRUCTURE,
    CALLBACK_BWD,
    CHECKPOINT_LOG,
    CHECKPOINT_SCAN_CUSTOM_VJP,
    CHECKPOINT_SQRT,
    CUSTOM_VJP_BWD,
    VECTOR_WHERE,
)
from exhibits.transpose.events import LinearJaxprStaged, TransposeStepped
from testkit import run_cli

EXAMPLES = example_sources("nan_finder")
GOLDEN = EXHIBITS / "nan_finder" / "golden"
REPO = EXHIBITS.parent

BROKEN = (CASES / "C22_where_sqrt_broken.py").read_text()
FIXED = (CASES / "C22_where_sqrt_fixed.py").read_text()
BROKEN_EXPECT = json.loads((CASES / "C22_where_sqrt_broken.expect.json").read_text())
FIXED_EXPECT = json.loads((CASES / "C22_where_sqrt_fixed.expect.json").read_text())


def found_of(ctx: FakeContext) -> NonfiniteFound:
    return ctx.one(NonfiniteFound)


def as_float(x: Any) -> float:
    return float(x) if not isinstance(x, str) else float(x.replace("inf", "inf"))


def same_numbers(got: Any, want: Any) -> None:
    """Nested numbers equal, NaN/Inf written as strings on both sides."""
    g = np.array([as_float(v) for v in np.ravel(np.array(got, dtype=object))], np.float64)
    w = np.array([as_float(v) for v in np.ravel(np.array(want, dtype=object))], np.float64)
    np.testing.assert_array_equal(g, w)


def truth_grad(source: str) -> list[np.ndarray]:
    """``jax.grad`` w.r.t. every floating argument of a fresh copy of the snippet."""
    s = load_snippet(source)
    argnums = tuple(
        i for i, a in enumerate(s.args) if np.issubdtype(np.asarray(a).dtype, np.inexact)
    )
    grads = jax.grad(s.f, argnums=argnums)(*s.args)
    return [np.asarray(g) for g in grads]


# ---- C22 -------------------------------------------------------------------------------------


def test_c22_broken_lands_on_sqrt_at_line_7_with_the_double_where_cure() -> None:
    ctx = run_probe("nan_finder", BROKEN)
    nf = found_of(ctx)
    assert nf.found and nf.kind == "nan"
    assert nf.primitive == "mul" and nf.primal_primitive == "sqrt"
    assert nf.source is not None and nf.source.line == 7
    assert nf.eqn_text is not None and nf.eqn_text.split(" = ")[1].startswith("mul")
    # The gradient's NaNs at elements 0 and 1, as the case says (and jax.grad agrees).
    same_numbers(nf.gradient[0], BROKEN_EXPECT["grad"])
    same_numbers(nf.gradient[0], truth_grad(BROKEN)[0].tolist())
    # The cure: the double where, with the exact rewrite of line 7.
    assert nf.cure is not None and nf.cure.pattern == "double_where"
    assert nf.cure.guarded == ["sqrt"] and nf.cure.start_line == 7
    assert nf.cure.before == "    return jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0))"
    assert nf.cure.after == (
        "    safe_x = jnp.where(x > 0, x, 1.0)\n"
        "    return jnp.sum(jnp.where(x > 0, jnp.sqrt(safe_x), 0.0))"
    )
    assert nf.cure.verified is True
    same_numbers(nf.cure.cured_gradient[0], FIXED_EXPECT["grad"])
    # Forward sqrt(-1) was already NaN: jax_debug_nans stops there, as the case records.
    assert nf.forward_nonfinite is True
    assert nf.forward_value is not None and nf.forward_value.nonfinite_at == [0]
    assert nf.debug_nans == BROKEN_EXPECT["debug_nans_error"]


def test_c22_broken_values_in_and_out_against_numpy() -> None:
    nf = found_of(run_probe("nan_finder", BROKEN))
    x = np.array([-1.0, 0.0, 4.0], np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        residual = np.float32(0.5) / np.sqrt(x)  # sqrt's JVP: t * (0.5 / sqrt(x))
        ct_sqrt_out = np.where(x > 0, 1.0, 0.0).astype(np.float32)  # where's transpose
        sent = ct_sqrt_out * residual
    arriving = nf.values_in[0]
    assert arriving.label.startswith("cotangent arriving")
    same_numbers(arriving.numbers, ct_sqrt_out.tolist())
    assert arriving.nonfinite_count == 0
    (res,) = [v for v in nf.values_in if v.value.role == "residual"]
    same_numbers(res.numbers, residual.tolist())
    assert res.nonfinite_at == [0, 1]
    (out,) = nf.values_out
    same_numbers(out.numbers, sent.tolist())
    assert out.nonfinite_at == [0, 1] and out.nonfinite_count == 2 and out.value.nonfinite


def test_c22_broken_steps_stop_at_the_nan_step() -> None:
    ctx = run_probe("nan_finder", BROKEN)
    nf = found_of(ctx)
    steps = ctx.of_type(TransposeStepped)
    assert [s.step for s in steps] == list(range(nf.step + 1 if nf.step is not None else 0))
    assert steps[-1].eqn_index == nf.eqn_index and steps[-1].primal_primitive == "sqrt"
    # Every earlier step wrote only finite cotangents; the last one a NaN.
    for s in steps[:-1]:
        assert not any(w.contribution.nonfinite for w in s.writes)
    assert any(w.contribution.nonfinite for w in steps[-1].writes)
    # Order: the linear jaxpr first (trace), then the steps and the finding (run).
    kinds = [type(e).__name__ for e in ctx.events if not isinstance(e, StageStarted)]
    assert kinds[0] == "LinearJaxprStaged" and kinds[-1] == "NonfiniteFound"
    lin = ctx.one(LinearJaxprStaged)
    assert len(lin.jaxpr.eqns) == 3


def test_a_second_run_in_the_same_process_attributes_the_same() -> None:
    first = found_of(run_probe("nan_finder", BROKEN))
    second = found_of(run_probe("nan_finder", BROKEN))
    assert first.primal_primitive == second.primal_primitive == "sqrt"


def test_c22_fixed_is_finite() -> None:
    ctx = run_probe("nan_finder", FIXED)
    nf = found_of(ctx)
    assert not nf.found and nf.cure is None and nf.step is None
    same_numbers(nf.gradient[0], FIXED_EXPECT["grad"])
    # The whole walk was emitted.
    assert nf.steps_walked == len(ctx.of_type(TransposeStepped)) > 0


def test_the_cure_applied_to_c22_gives_the_fixed_gradient() -> None:
    nf = found_of(run_probe("nan_finder", BROKEN))
    assert nf.cure is not None
    # The rewritten snippet, run as plain JAX, has the fixed case's gradient.
    np.testing.assert_array_equal(truth_grad(nf.cure.source)[0], np.array(FIXED_EXPECT["grad"]))
    assert not found_of(run_probe("nan_finder", nf.cure.source)).found


# ---- the examples ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_against_jax_grad_and_golden(name: str) -> None:
    source = EXAMPLES[name]
    nf = found_of(run_probe("nan_finder", source))
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    truth = truth_grad(source)
    has_nonfinite = any(not np.all(np.isfinite(g)) for g in truth)
    assert nf.found == has_nonfinite == golden["has_nonfinite"]
    for i, g in zip(golden["argnums"], truth, strict=True):
        same_numbers(nf.gradient[i], g.tolist())
        same_numbers(nf.gradient[i], golden["gradient"][i])
    if nf.found:
        assert nf.debug_nans == golden["debug_nans_error"]
        assert nf.source is not None
        assert any(v.nonfinite_count > 0 for v in nf.values_out)


def test_entropy_log_cures_the_log_inside_the_branch() -> None:
    nf = found_of(run_probe("nan_finder", EXAMPLES["entropy_log"]))
    assert nf.found and nf.source is not None and nf.source.line == 7
    # 0 * log(0): mul's transpose multiplies the zero cotangent by log(0) = -inf.
    assert nf.primal_primitive == "mul" and nf.forward_nonfinite is True
    (res,) = [v for v in nf.values_in if v.value.role == "residual"]
    assert res.numbers is not None and res.numbers[0] == "-inf"
    assert nf.cure is not None and nf.cure.guarded == ["log"] and nf.cure.verified
    assert "jnp.log(safe_p)" in nf.cure.after
    # The account names the step's own primitive (a review: it said "log's derivative").
    assert "the transpose of mul in that branch multiplies that zero" in nf.cure.explanation
    cured = truth_grad(nf.cure.source)[0]
    assert np.all(np.isfinite(cured))
    same_numbers(nf.cure.cured_gradient[0], cured.tolist())
    p = np.array([0.25, 0.75])
    np.testing.assert_allclose(cured[1:], -(np.log(p) + 1.0), rtol=1e-6)


def test_norm_at_zero_is_inf_with_no_where_to_cure() -> None:
    nf = found_of(run_probe("nan_finder", EXAMPLES["norm_at_zero"]))
    assert nf.found and nf.kind == "inf" and nf.primal_primitive == "sqrt"
    assert nf.source is not None and nf.source.line == 6
    assert nf.forward_nonfinite is False  # sqrt(0) = 0: only the cotangent is bad
    assert nf.cure is None and nf.no_cure is not None and "custom_jvp" in nf.no_cure
    (out,) = nf.values_out
    assert out.numbers == "inf" and out.nonfinite_at == [0]  # a scalar: 1 * sqrt'(0)


def test_sin_times_x_is_finite() -> None:
    src = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) * x\n\nargs = (1.0,)\n"
    nf = found_of(run_probe("nan_finder", src))
    assert not nf.found
    assert math.isclose(nf.gradient[0], 1.3817732906760363, rel_tol=1e-6)


def test_user_error_propagates() -> None:
    # Two outputs: JAX's own jax.grad error (one vector output is walked from ones instead).
    src = (
        "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x), x\n\nargs = (jnp.ones(3),)\n"
    )
    with pytest.raises(TypeError, match="scalar-output"):
        run_probe("nan_finder", src)
    src = "def f(x):\n    raise ValueError('mine')\n\n\nargs = (1.0,)\n"
    with pytest.raises(ValueError, match="mine"):
        run_probe("nan_finder", src)


# ---- the cure rewrite on its own ---------------------------------------------------------------

TWO_LINES = """import jax.numpy as jnp

def f(x):
    y = jnp.sqrt(x)
    return jnp.sum(jnp.where(x > 0, y, 0.0))

args = (jnp.array([-1.0, 0.0, 4.0]),)
"""

LAMBDA = """import jax
import jax.numpy as jnp

def f(x):
    return jnp.sum(jax.vmap(lambda t: jnp.where(t <= 0, 0.0, t ** 0.5))(x))

args = (jnp.array([-1.0, 0.0, 4.0]),)
"""

DIVIDE = """import jax.numpy as jnp

def f(x):
    return jnp.sum(jnp.where(x != 0, 1.0 / x, 0.0))

args = (jnp.array([0.0, 2.0]),)
"""


@pytest.mark.parametrize(
    ("source", "line", "form", "guarded"),
    [
        (TWO_LINES, 4, "two_lines", "sqrt"),
        (LAMBDA, 5, "inline", "**"),
        (DIVIDE, 4, "two_lines", "/"),
    ],
    ids=["assigned_then_where", "lambda_false_branch", "division"],
)
def test_cure_rewrites_verified_by_jax_grad(
    source: str, line: int, form: str, guarded: str
) -> None:
    assert not np.all(np.isfinite(truth_grad(source)[0]))
    nf = found_of(run_probe("nan_finder", source))
    assert nf.found and nf.source is not None and nf.source.line == line
    assert nf.cure is not None and nf.cure.form == form and nf.cure.guarded == [guarded]
    assert nf.cure.verified is True
    assert np.all(np.isfinite(truth_grad(nf.cure.source)[0]))
    # Where the branch is selected the gradient is unchanged.
    before, after = truth_grad(source)[0], truth_grad(nf.cure.source)[0]
    ok = np.isfinite(before)
    np.testing.assert_array_equal(after[ok], before[ok])


def test_no_where_no_cure() -> None:
    assert double_where("def f(x):\n    return jnp.sqrt(x)\n", 2, 11) is None
    assert double_where("def f(x):\n    return jnp.where(x > 0, x * 2, 0.0)\n", 2, 26) is None
    assert double_where("def f(:\n", 1, 0) is None


# ---- the CLI ---------------------------------------------------------------------------------


def _cli_first_nan(path: Path, stderr_has: tuple[str, ...] = ()) -> Any:
    out = run_cli("run", "nan_finder", str(path), "--print", "first_nan", cwd=REPO)
    first = json.loads(out.stdout)
    # a gradient with NaN/Inf is a finding: exit 3, said on stderr (a finite one: 0, unless f
    # hides a NaN in its forward pass)
    if first is not None:
        assert out.returncode == 3 and "NonfiniteGradient" in out.stderr, out.stderr
    else:
        assert out.returncode in (0, 3), out.stderr
    for text in stderr_has:
        assert text in out.stderr, out.stderr
    return first


def _page_says(nf: NonfiniteFound) -> dict[str, Any]:
    """What the page shows of a finding, as ``first_nan`` prints it (from the probe's event)."""
    assert nf.source is not None
    return {
        "primitive": nf.primal_primitive,
        "line": nf.source.line,
        "library_call": nf.library_call,
        "kind": nf.kind,
        "linear_primitive": nf.primitive,
        "primal_primitive": nf.primal_primitive,
        "step": nf.step,
        "inner_step": nf.inner_step,
        "inside": [
            {
                "primitive": c.primitive,
                "name": c.name,
                "line": c.source.line if c.source else None,
                "iteration": c.iteration,
            }
            for c in nf.inside
        ],
        "forward_nonfinite": nf.forward_nonfinite,
        "residuals_nonfinite": [
            v.label for v in nf.values_in if v.value.role == "residual" and v.nonfinite_count > 0
        ],
        "inputs_nonfinite": nf.inputs_nonfinite,
        "debug_nans": nf.debug_nans,
        "seed": nf.seed,
    }


def _debug_nans_error(source: str) -> str | None:
    """What ``jax.grad`` raises under ``jax_debug_nans`` on a fresh copy of the snippet."""
    s = load_snippet(source)
    argnums = tuple(
        i for i, a in enumerate(s.args) if np.issubdtype(np.asarray(a).dtype, np.inexact)
    )
    with jax.debug_nans(True):
        try:
            [np.asarray(g) for g in jax.grad(s.f, argnums=argnums)(*s.args)]
        except FloatingPointError as e:
            return f"FloatingPointError: {e}"
    return None


def test_cli_print_first_nan_c22(tmp_path: Path) -> None:
    """``first_nan`` on C22: the keys it always had (``primitive`` the primal one, ``line``),
    then what the page says, each against the probe's event and JAX itself."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(BROKEN)
    got = _cli_first_nan(snippet)
    assert got == _page_says(found_of(run_probe("nan_finder", BROKEN)))
    assert {k: got[k] for k in ("primitive", "line")} == {"primitive": "sqrt", "line": 7}
    x = np.asarray(load_snippet(BROKEN).args[0], np.float32)
    with np.errstate(all="ignore"):
        # jax.grad's gradient has NaNs (0 * inf, 0 * nan); sqrt(-1) is already NaN forward; the
        # residual sqrt's JVP saves, 0.5 / sqrt(x), is NaN/Inf at x <= 0.
        assert np.isnan(truth_grad(BROKEN)[0]).any() and got["kind"] == "nan"
        assert got["forward_nonfinite"] is bool(np.isnan(np.sqrt(x)).any()) is True
        assert not np.all(np.isfinite(0.5 / np.sqrt(x)))
    assert (got["linear_primitive"], got["primal_primitive"]) == ("mul", "sqrt")
    assert got["residuals_nonfinite"] == ["residual a"]
    assert got["inside"] == [] and got["inner_step"] is None
    assert got["inputs_nonfinite"] == [] and np.all(np.isfinite(x))
    assert got["debug_nans"] == _debug_nans_error(BROKEN)
    assert got["debug_nans"] is not None and "encountered in sqrt" in got["debug_nans"]


def test_cli_print_first_nan_finite_is_null(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(FIXED)
    assert _cli_first_nan(snippet) is None
    assert np.all(np.isfinite(truth_grad(FIXED)[0]))


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("def f(n):\n    return n * 2.0\n\n\nargs = (3,)\n", "no floating-point argument"),
        ("def f():\n    return 1.0\n\n\nargs = ()\n", "no floating-point argument"),
        (
            "def f(x):\n    return x * 2.0\n\n\nargs = (1.0,)\nargnums = ()\n",
            "selects no argument",
        ),
        ("def f(x):\n    return x * 2.0\n\n\nargs = (1.0,)\nargnums = 5\n", "argnums = 5"),
    ],
    ids=["int_arg", "no_args", "empty_argnums", "argnums_out_of_range"],
)
def test_cli_nothing_to_differentiate_fails_not_no_nan(
    tmp_path: Path, source: str, words: str
) -> None:
    """Nothing differentiable is an invalid snippet (as in the transpose exhibit), never
    ``first_nan: null`` ("the gradient is finite")."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(source)
    out = run_cli("run", "nan_finder", str(snippet), "--print", "first_nan", cwd=REPO)
    assert out.returncode != 0
    assert out.stdout.strip() != "null"
    assert "invalid_snippet" in out.stderr and words in out.stderr
    with pytest.raises(Exception, match=r"argnums|floating-point") as info:
        run_probe("nan_finder", source)
    assert type(info.value).__name__ == "InvalidSnippet"


# ---- inside jit helpers and scan bodies --------------------------------------------------------


def _line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_nan_inside_a_jitted_helper_lands_on_the_helpers_line() -> None:
    source = EXAMPLES["jit_helper"]
    ctx = run_probe("nan_finder", source)
    nf = found_of(ctx)
    assert nf.found and nf.primal_primitive == "sqrt"
    assert nf.source is not None and nf.source.line == _line_of(source, "jnp.sqrt(")
    assert nf.source.function == "norm"
    (call,) = nf.inside
    assert (call.primitive, call.name, call.iteration) == ("jit", "norm", None)
    assert call.source is not None and call.source.line == _line_of(source, "norm(w - x)")
    # The step the stepper shows is the jit step; the inner step is the helper's.
    steps = ctx.of_type(TransposeStepped)
    assert nf.step is not None and nf.inner_step is not None
    assert steps[nf.step].primitive == "jit"
    # JAX: sqrt's slope at sum((w - x)**2) = 0 is infinite; the gradient is NaN.
    assert np.isinf(np.asarray(jax.grad(jax.numpy.sqrt)(0.0)))
    same_numbers(nf.gradient[0], truth_grad(source)[0].tolist())
    # The forward value of that sqrt, evaluated inside the helper: sqrt(0) = 0, finite.
    assert nf.forward_value is not None and nf.forward_value.numbers == 0.0
    assert nf.forward_nonfinite is False
    # Headless: what the page says, the call path included; sqrt(0) = 0 is finite while the
    # residual its JVP saved, 0.5 / sqrt(0), is infinite.
    got = _artefact("jit_helper")
    assert got == _page_says(nf)
    assert (got["primitive"], got["line"], got["kind"]) == ("sqrt", nf.source.line, "inf")
    assert got["inside"] == [
        {
            "primitive": "jit",
            "name": "norm",
            "line": _line_of(source, "norm(w - x)"),
            "iteration": None,
        }
    ]
    with np.errstate(divide="ignore"):
        assert np.isinf(np.float32(0.5) / np.sqrt(np.float32(0.0)))
    assert got["forward_nonfinite"] is False and got["residuals_nonfinite"] == ["residual b"]
    assert got["debug_nans"] == _debug_nans_error(source)


def test_a_nan_inside_a_scan_body_lands_on_its_line_and_iteration() -> None:
    source = EXAMPLES["scan_sqrt"]
    nf = found_of(run_probe("nan_finder", source))
    xs = np.asarray(load_snippet(source).args[1])
    assert nf.found and nf.kind == "inf" and nf.primal_primitive == "sqrt"
    assert nf.source is not None and nf.source.line == _line_of(source, "jnp.sqrt(x)")
    (call,) = nf.inside
    assert call.primitive == "scan" and call.iteration == int(np.flatnonzero(xs == 0)[0])
    assert call.source is not None and call.source.line == _line_of(source, "jax.lax.scan(")
    # jax.grad: the gradient w.r.t. xs is infinite exactly at that iteration.
    grad_xs = truth_grad(source)[1]
    assert np.flatnonzero(~np.isfinite(grad_xs)).tolist() == [call.iteration]
    same_numbers(nf.gradient[1], grad_xs.tolist())
    # The forward value is sqrt's output at that iteration: sqrt(xs[k]) = 0, finite.
    assert nf.forward_value is not None and nf.forward_nonfinite is False
    assert nf.forward_value.numbers == float(np.sqrt(xs[call.iteration]))
    assert nf.no_cure is not None and "The forward value is finite" in nf.no_cure
    # Headless: the same iteration, the one where jax.grad's gradient is infinite.
    got = _artefact("scan_sqrt")
    assert got == _page_says(nf)
    (inside,) = got["inside"]
    assert (inside["primitive"], inside["iteration"]) == ("scan", call.iteration)
    assert inside["line"] == call.source.line
    assert (got["kind"], got["forward_nonfinite"]) == ("inf", False)
    assert got["debug_nans"] is None and _debug_nans_error(source) is None


def test_the_forward_value_inside_a_scan_is_that_iterations() -> None:
    # The carry doubles: 0.5 at iteration 0, 1.0 at iteration 1, where arcsin's slope
    # 1/sqrt(1 - c**2) is infinite while arcsin itself is pi/2.
    source = (
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def f(c0):\n"
        "    def body(c, _):\n"
        "        c = 2.0 * c\n"
        "        return c, jnp.arcsin(c)\n\n"
        "    _, ys = jax.lax.scan(body, c0, None, length=2)\n"
        "    return jnp.sum(ys)\n\n\n"
        "args = (jnp.float32(0.25),)\n"
    )
    nf = found_of(run_probe("nan_finder", source))
    (call,) = nf.inside
    carries = np.float32(0.25) * np.float32(2.0) ** np.arange(1, 3, dtype=np.float32)
    assert call.iteration == int(np.flatnonzero(carries == 1.0)[0]) == 1
    assert nf.primal_primitive == "asin" and nf.forward_nonfinite is False
    assert nf.forward_value is not None
    assert nf.forward_value.numbers == float(np.arcsin(carries[call.iteration]))
    assert not np.isfinite(truth_grad(source)[0])


def _artefact(example: str) -> Any:
    return _cli_first_nan(EXHIBITS / "nan_finder" / "examples" / f"{example}.py")


def test_a_scan_too_long_to_walk_per_iteration_is_reported_at_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from exhibits.nan_finder import probe

    source = EXAMPLES["scan_sqrt"]
    monkeypatch.setattr(probe, "MAX_SCAN_EQN_STEPS", 3)  # 4 iterations x a few eqns: too many
    nf = found_of(run_probe("nan_finder", source))
    assert nf.found and nf.inside == [] and nf.inner_step is None
    assert nf.primitive == "scan"
    assert nf.not_descended is not None and "did not walk inside it" in nf.not_descended
    assert nf.source is not None and nf.source.line == _line_of(source, "jax.lax.scan(")


def test_a_nan_already_in_the_arguments_is_named() -> None:
    source = (
        "import jax.numpy as jnp\n\n\n"
        "def f(p):\n"
        '    return jnp.sum(jnp.sqrt(p["x"])) + jnp.sum(p["y"])\n\n\n'
        'args = ({"x": jnp.array([1.0, jnp.nan, 4.0]), "y": jnp.ones(2)},)\n'
    )
    nf = found_of(run_probe("nan_finder", source))
    x = np.array([1.0, np.nan, 4.0])
    assert nf.found
    assert nf.inputs_nonfinite == [
        f"args[0]['x']: {np.count_nonzero(np.isnan(x))} of 3 elements NaN/Inf"
    ]
    clean = found_of(run_probe("nan_finder", EXAMPLES["norm_at_zero"]))
    assert clean.found and clean.inputs_nonfinite == []


def test_a_reverse_scan_and_a_nan_born_in_the_forward_pass() -> None:
    rev = (
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def f(xs):\n"
        "    def body(c, x):\n"
        "        return c + jnp.sqrt(x), None\n\n"
        "    c, _ = jax.lax.scan(body, 0.0, xs, reverse=True)\n"
        "    return c\n\n\n"
        "args = (jnp.array([1.0, 0.0, 4.0, 9.0, 16.0]),)\n"
    )
    nf = found_of(run_probe("nan_finder", rev))
    (call,) = nf.inside
    grad = truth_grad(rev)[0]
    # The only infinite gradient entry is the zero's index, whichever way the scan ran.
    assert call.reverse and call.iteration == int(np.flatnonzero(~np.isfinite(grad))[0]) == 1
    assert call.forward_nonfinite_iteration == 1  # 0.5 / sqrt(0), saved for the backward pass
    assert nf.forward_value is not None and nf.forward_value.numbers == 0.0  # sqrt(xs[1])

    fwd = (
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def f(x0):\n"
        "    def body(c, _):\n"
        "        c = c - 1.0\n"
        "        return c + 0.0 * jnp.sqrt(c), None\n\n"
        "    c, _ = jax.lax.scan(body, x0, None, length=6)\n"
        "    return c\n\n\n"
        "args = (jnp.float32(2.5),)\n"
    )
    nf = found_of(run_probe("nan_finder", fwd))
    (call,) = nf.inside
    # The carry goes 1.5, 0.5, -0.5, ...: sqrt turns NaN at iteration 2 of the forward pass
    # (numpy), the backward pass meets it first at the last iteration.
    carries = 2.5 - np.arange(1, 7)
    first = int(np.flatnonzero(carries < 0)[0])
    assert not call.reverse and call.iteration == 5
    assert call.forward_nonfinite_iteration == first == 2
    # sqrt's forward value at iteration 5 is sqrt(-3.5): NaN already (the carry ran forward to
    # it; at iteration 0 it would be sqrt(1.5)).
    assert nf.forward_nonfinite is True and carries[call.iteration] == -3.5  # sqrt(<0): NaN


def test_a_nan_inside_the_branch_a_cond_took() -> None:
    source = (
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "def f(x):\n"
        "    return jax.lax.cond(x >= 0, lambda v: jnp.sqrt(v), lambda v: -v, x)\n\n\n"
        "args = (0.0,)\n"
    )
    nf = found_of(run_probe("nan_finder", source))
    (call,) = nf.inside
    # x >= 0 holds at 0.0: cond runs branches[1], the true branch (sqrt), whose slope at 0 is
    # infinite (jax.grad agrees).
    assert (call.primitive, call.name) == ("cond", "branch 1")
    assert nf.primal_primitive == "sqrt" and nf.source is not None
    assert nf.source.line == 6 and nf.source.column == source.splitlines()[5].index("jnp.sqrt")
    assert np.isinf(truth_grad(source)[0])
    assert nf.forward_value is not None and nf.forward_value.numbers == 0.0  # sqrt(0.0)


# ---- jax.checkpoint, a custom_vjp bwd, a vector output (s11 break-it review) -----------------

REMAT = CHECKPOINT_SQRT


def test_a_nan_inside_a_checkpointed_function_lands_in_its_body() -> None:
    nf = found_of(run_probe("nan_finder", REMAT))
    (call,) = nf.inside
    # jax.checkpoint stages remat2 (remat_p's name in jax 0.10.2); its name is g's.
    assert (call.primitive, call.name) == ("remat2", "g")
    assert call.source is not None and call.source.line == _line_of(REMAT, "g(x).sum()")
    assert (nf.primitive, nf.primal_primitive) == ("mul", "sqrt")
    assert nf.source is not None and nf.source.line == _line_of(REMAT, "jnp.sqrt(x)")
    assert nf.source.function == "g"
    x = np.asarray(load_snippet(REMAT).args[0])
    # The forward value inside g: sqrt(x) = [0, 1], finite (numpy); the residual 0.5/sqrt(x) of
    # sqrt's JVP is infinite at 0, so is jax.grad's gradient there.
    assert nf.forward_value is not None and nf.forward_nonfinite is False
    same_numbers(nf.forward_value.numbers, np.sqrt(x).tolist())
    (residual,) = [v for v in nf.values_in if v.value.role == "residual"]
    with np.errstate(divide="ignore"):
        same_numbers(residual.numbers, (np.float32(0.5) / np.sqrt(x)).tolist())
    same_numbers(nf.gradient[0], truth_grad(REMAT)[0].tolist())
    assert np.isinf(truth_grad(REMAT)[0][0]) and nf.kind == "inf"
    assert nf.no_cure is not None and "remat2" not in nf.no_cure and "sqrt" in nf.no_cure
    got = _cli_first_nan_of(REMAT)
    assert got == _page_says(nf)
    assert got["inside"] == [
        {"primitive": "remat2", "name": "g", "line": call.source.line, "iteration": None}
    ]


CUSTOM_VJP = CUSTOM_VJP_BWD


def test_a_nan_made_by_a_custom_vjp_bwd_names_the_bwd_rule() -> None:
    nf = found_of(run_probe("nan_finder", CUSTOM_VJP))
    assert nf.primitive == "custom_lin" and nf.inside == []
    assert nf.source is not None and nf.source.line == _line_of(CUSTOM_VJP, "h(x).sum()")
    # jax.grad: g / (r - r) = 1 / 0 = inf everywhere (numpy agrees).
    with np.errstate(divide="ignore"):
        assert np.isinf(np.float32(1.0) / (np.float32(1.0) - np.float32(1.0)))
    grad = truth_grad(CUSTOM_VJP)[0]
    assert np.isinf(grad).all() and nf.kind == "inf"
    same_numbers(nf.gradient[0], grad.tolist())
    assert nf.no_cure is not None
    bwd_line = _line_of(CUSTOM_VJP, "def h_bwd(")
    assert f"custom_vjp backward rule h_bwd (defined on line {bwd_line})" in nf.no_cure
    assert f"div on line {_line_of(CUSTOM_VJP, 'g / (r - r)')}" in nf.no_cure
    assert "custom_jvp" not in nf.no_cure


VECTOR = VECTOR_WHERE


def test_a_vector_output_is_walked_from_ones_as_in_the_transpose_exhibit() -> None:
    from jaxscope.internals.transpose_walk import grad_seed, linearize_vjp

    ctx = run_probe("nan_finder", VECTOR)
    nf = found_of(ctx)
    s = load_snippet(VECTOR)
    # The seed the transpose exhibit starts from (both call grad_seed), and the note it shows.
    assert nf.seed == grad_seed(linearize_vjp(s.f, s.args))[1]
    assert nf.seed.startswith("ones(f32[3]):") and "gradient of sum(f)" in nf.seed
    out, f_vjp = jax.vjp(s.f, *s.args)
    (want,) = f_vjp(jax.numpy.ones_like(out))
    same_numbers(nf.gradient[0], np.asarray(want).tolist())
    assert np.isnan(np.asarray(want)[:2]).all() and nf.kind == "nan"
    assert nf.primal_primitive == "sqrt" and nf.source is not None
    assert nf.source.line == _line_of(VECTOR, "jnp.sqrt(x)")
    # The double where cures it: jax.vjp of the rewrite with ones is finite (and equals the
    # gradient of sum(where(b, sqrt(x), -x)) away from the discarded branch: [-1, -1, 0.25]).
    assert nf.cure is not None and nf.cure.verified is True
    same_numbers(nf.cure.cured_gradient[0], [-1.0, -1.0, 0.25])
    assert nf.debug_nans is not None and "sqrt" in nf.debug_nans
    # The CLI says what was differentiated, as the page's seed note and the transpose exhibit's
    # CLI do: the seed cotangent, on stderr.
    note = f"jaxscope: note: the walk's seed cotangent is {nf.seed}"
    got = _cli_first_nan_of(VECTOR, (note,))
    assert got == _page_says(nf) and got["seed"] == nf.seed


def _cli_first_nan_of(source: str, stderr_has: tuple[str, ...] = ()) -> Any:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        snippet = Path(tmp) / "snippet.py"
        snippet.write_text(source)
        return _cli_first_nan(snippet, stderr_has)


# ---- s11c review: f's own output, a custom_vjp bwd's line, remat + scan, callbacks -----------


def _plain_debug(source: str, flag: str) -> str | None:
    """What plain ``jax.grad`` raises under ``jax.debug_<flag>(True)`` (class: first line)."""
    s = load_snippet(source)
    mode = jax.debug_infs(True) if flag == "infs" else jax.debug_nans(True)
    try:
        with mode:
            np.asarray(jax.grad(s.f)(*s.args))
    except FloatingPointError as e:
        return f"FloatingPointError: {str(e).splitlines()[0]}"
    return None


def test_a_nonfinite_forward_value_that_f_returns_is_not_called_unused() -> None:
    nf = found_of(run_probe("nan_finder", CHECKPOINT_LOG))
    s = load_snippet(CHECKPOINT_LOG)
    # log(0) = -inf is f's own output (numpy and JAX agree): nothing discarded it.
    with np.errstate(divide="ignore"):
        assert np.isinf(np.log(np.asarray(s.args[0])).sum())
    assert np.isinf(np.asarray(s.f(*s.args)))
    assert nf.forward_nonfinite is True and nf.output_nonfinite is True
    assert nf.kind == "inf" and nf.debug_nans is None
    # jax_debug_infs exists and stops at the log in the forward pass (plain JAX says so).
    want = _plain_debug(CHECKPOINT_LOG, "infs")
    assert want is not None and "log" in want
    assert nf.debug_infs == want
    assert _plain_debug(CHECKPOINT_LOG, "nans") is None
    # C22: sqrt of a negative is NaN in the forward pass, but the where discards it: f finite.
    c22 = found_of(run_probe("nan_finder", BROKEN))
    b = load_snippet(BROKEN)
    assert np.isfinite(np.asarray(b.f(*b.args))).all()
    assert c22.forward_nonfinite is True and c22.output_nonfinite is False


def test_a_custom_vjp_bwd_finding_lands_on_the_bwds_bad_line() -> None:
    nf = found_of(run_probe("nan_finder", CUSTOM_VJP))
    assert nf.bwd_name == "h_bwd" and nf.bwd_primitive == "div"
    assert nf.bwd_source is not None
    assert nf.bwd_source.line == _line_of(CUSTOM_VJP, "g / (r - r)")
    assert nf.bwd_source.function == "h_bwd"
    # The value of custom_vjp_call is not what the rule's Inf came from: not shown.
    assert nf.forward_value is None and nf.forward_nonfinite is None
    # sin(1), sin(2) are finite: f's output is.
    s = load_snippet(CUSTOM_VJP)
    assert np.isfinite(np.asarray(s.f(*s.args))) and nf.output_nonfinite is False


def test_a_custom_vjp_bwd_inside_a_scan_inside_a_checkpoint_is_walked() -> None:
    src = CHECKPOINT_SCAN_CUSTOM_VJP
    nf = found_of(run_probe("nan_finder", src))
    grad = truth_grad(src)[0]
    # The bwd divides by x = 0 at element 0: jax.grad is Inf there, finite at element 1.
    assert np.isinf(grad[0]) and np.isfinite(grad[1])
    same_numbers(nf.gradient[0], grad.tolist())
    assert [c.primitive for c in nf.inside] == ["remat2", "scan"]
    assert nf.inside[0].name == "h"
    # scan's transpose walks the last iteration first: that is where the Inf is first written.
    assert nf.inside[1].iteration == 1
    assert nf.primitive == "custom_lin" and nf.not_descended is None
    assert nf.bwd_source is not None and nf.bwd_source.line == _line_of(src, "ct / x")
    assert nf.kind == "inf"


def test_a_custom_vjp_bwd_walked_inside_a_checkpoint_matches_jax() -> None:
    from jaxscope.internals.transpose_walk import inside, linearize_vjp, seed_cotangents, walk

    s = load_snippet(CHECKPOINT_SCAN_CUSTOM_VJP)
    lin = linearize_vjp(s.f, s.args)
    top = walk(lin, seed_cotangents(lin))
    (call,) = [r for r in top.steps if r.eqn.primitive.name == "remat2"]
    body = inside(lin, call)
    assert body is not None
    # The body's walk (remat_transpose's split: non-linear part recomputed, linear part
    # transposed) sends back what JAX's own transpose of the call did.
    got = walk(body, call.cts_in).cotangents
    want = truth_grad(CHECKPOINT_SCAN_CUSTOM_VJP)[0]
    same_numbers(numbers_of(got[0]), want.tolist())


def numbers_of(x: Any) -> Any:
    from exhibits.nan_finder.probe import numbers

    return numbers(x)


def test_a_callback_raising_under_debug_nans_is_recorded_and_the_run_goes_on() -> None:
    nf = found_of(run_probe("nan_finder", CALLBACK_BWD))
    s = load_snippet(CALLBACK_BWD)
    grad = np.asarray(jax.grad(s.f)(*s.args))
    same_numbers(nf.gradient[0], grad.tolist())
    assert np.isnan(grad[0]) and nf.kind == "nan"
    # Plain JAX: under jax_debug_nans the callback's jnp division raises FloatingPointError,
    # which reaches jax.grad's caller wrapped by XLA (JaxRuntimeError, INTERNAL: CpuCallback).
    with pytest.raises(Exception) as info, jax.debug_nans(True):
        np.asarray(jax.grad(s.f)(*s.args))
    assert "FloatingPointError: invalid value (nan) encountered in div" in str(info.value)
    assert nf.debug_nans is not None
    assert nf.debug_nans.startswith("FloatingPointError: invalid value (nan) encountered in div")
    assert type(info.value).__name__ in nf.debug_nans
    assert nf.bwd_source is not None
    assert nf.bwd_source.line == _line_of(CALLBACK_BWD, "pure_callback")


def test_a_bwd_returning_the_wrong_structure_is_blamed_at_its_return() -> None:
    from jaxscope.sandbox.errors import transformation_frames, user_frames
    from jaxscope.sandbox.probe_api import BLAME_ATTR

    src = BWD_WRONG_STRUCTURE
    s = load_snippet(src)
    with pytest.raises(TypeError, match="Custom VJP bwd rule must produce") as plain:
        jax.grad(s.f)(*s.args)
    with pytest.raises(TypeError) as info:
        run_probe("nan_finder", src)
    assert str(info.value) == str(plain.value)  # JAX's own message, unchanged
    # No snippet frame and no JAX cause (whose frame is the call in f) is left on it: the
    # runner's run_failed takes the blamed line, bwd's return (custom_rules.return_source).
    assert user_frames(info.value.__traceback__) == []
    assert transformation_frames(info.value) == []
    line, function, _ = getattr(info.value, BLAME_ATTR)
    assert (line, function) == (_line_of(src, "return (ct, ct)"), "g_bwd")


def test_a_nonfinite_forward_value_discarded_by_maximum_is_not_called_fs_own() -> None:
    src = (
        "import jax.numpy as jnp\n\n\n"
        "def f(x):\n"
        "    return jnp.maximum(jnp.log(x), -1.0).sum()\n\n\n"
        "args = (jnp.array([0.0, 1.0]),)\n"
    )
    nf = found_of(run_probe("nan_finder", src))
    s = load_snippet(src)
    # log(0) = -inf, but maximum discards it: f is finite (JAX and numpy), its gradient NaN.
    assert np.isfinite(np.asarray(s.f(*s.args)))
    with np.errstate(divide="ignore"):
        assert np.isfinite(np.maximum(np.log(np.array([0.0, 1.0])), -1.0).sum())
    grad = truth_grad(src)[0]
    same_numbers(nf.gradient[0], grad.tolist())
    assert np.isnan(grad[0])
    assert nf.primal_primitive == "log" and nf.forward_nonfinite is True
    assert nf.output_nonfinite is False and nf.cure is None and nf.no_cure is not None
    assert "f's output is finite" in nf.no_cure
    assert "the function itself is not finite" not in nf.no_cure


# ---- train steps: a pytree output's first leaf (jaxscope.grad_output) ---------------------------


@pytest.mark.parametrize("which", ["mlp_sgd_step", "scan_rnn_step"])
def test_train_step_walks_the_gradient_of_its_first_leaf(which: str) -> None:
    from exhibits.nan_finder.probe import MAX_GRADIENT_ELEMENTS, numbers
    from exhibits.train_steps import FIRST_LEAF_PATH, TRAIN_STEP, loss_grad, scan_rnn_step

    source = TRAIN_STEP if which == "mlp_sgd_step" else scan_rnn_step()
    ctx = run_probe("nan_finder", source)
    nf = found_of(ctx)
    assert not nf.found and nf.seed == "1.0"
    want = loss_grad(source, (0, 1, 2))  # params, x/xs, y/ys: all floating
    assert nf.gradient == numbers(list(want))
    sent = [leaf for leaf in jax.tree.leaves(want) if np.size(leaf) <= MAX_GRADIENT_ELEMENTS]
    assert sent  # some leaves are compared value for value
    # The walk ran over the loss's linear jaxpr, said in its note with the key path.
    note = ctx.one(LinearJaxprStaged).output_leaf
    assert note is not None and note.path == FIRST_LEAF_PATH and note.aval == "f32[]"
    assert f"output path {FIRST_LEAF_PATH}" in note.note
    assert len(ctx.of_type(LinearJaxprStaged)[0].jaxpr.outvars) == 1  # the loss's tangent only
    assert nf.steps_walked == len(ctx.of_type(TransposeStepped)) > 0


def test_a_pytree_output_whose_first_leaf_is_not_a_scalar_fails_short() -> None:
    from exhibits.train_steps import PARAMS_STEP

    with pytest.raises(TypeError, match="scalar-output") as raised:
        run_probe("nan_finder", PARAMS_STEP)
    message = str(raised.value)
    assert len(message) < 1000 and "Array(" not in message
    assert "a dict of 4 leaves" in message and "output['b1'], is f32[4]" in message


def test_a_nan_in_a_train_steps_loss_gradient_is_found() -> None:
    """The first-leaf rule and the finder together: sqrt at 0 inside the loss of a step."""
    from exhibits.train_steps import TRAIN_STEP

    bad = "    return jnp.mean(jnp.sqrt((pred - y) ** 2 * params['b1'][0]))"
    source = TRAIN_STEP.replace("    return jnp.mean((pred - y) ** 2)", bad)
    line = source.splitlines().index(bad) + 1
    nf = found_of(run_probe("nan_finder", source))
    assert nf.found and nf.primal_primitive == "sqrt"
    assert nf.source is not None and nf.source.line == line and nf.source.function == "loss"


@pytest.mark.parametrize(
    ("output", "dtype"),
    [("jnp.sum(jnp.exp(1j * x))", "complex64"), ("jnp.sum(x) > 2.0", "bool")],
    ids=["complex", "bool"],
)
def test_a_non_real_output_is_refused_before_the_walk(output: str, dtype: str) -> None:
    """Break-it review: nan_finder walked a complex (or bool) output's backward pass, then
    failed in jax.grad at stage run; the transpose exhibit refused it at once. Both now run
    jax.grad's own output dtype check before any walk, and say what jax.grad says."""
    import importlib

    source = (
        f"import jax.numpy as jnp\n\ndef f(x):\n    return {output}\n\nargs = (jnp.arange(3.0),)\n"
    )
    with pytest.raises(TypeError) as theirs:
        jax.grad(load_snippet(source).f)(jax.numpy.arange(3.0))
    assert "grad requires real-valued outputs" in str(theirs.value)
    probe: Any = importlib.import_module("exhibits.nan_finder.probe")
    ctx = FakeContext(snippet=load_snippet(source))
    with pytest.raises(TypeError) as ours:
        probe.run(ctx)
    assert str(ours.value) == str(theirs.value) and dtype in str(ours.value)
    assert not ctx.of_type(TransposeStepped) and not ctx.of_type(LinearJaxprStaged)
