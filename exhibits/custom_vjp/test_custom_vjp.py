"""Tests of the custom_vjp lab's probe: every number against JAX itself and independent truths.

Truths: ``jax.grad(f)`` on a separately loaded copy of the snippet (the custom column), the
gradient of the same math written out without any custom rule (the autodiff column), central
differences in float64 computed here with numpy-driven evaluations (the FD column), and the
shared cases' expected outcomes (``cases/C20_*.expect.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.protocol import JaxprStaged
from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet

from exhibits.conftest import CASES, EXHIBITS, FakeContext, example_sources, run_probe
from exhibits.custom_vjp import artefacts
from exhibits.custom_vjp.events import CustomCallRecorded, CustomRuleChecked
from testkit import run_cli

EXAMPLES = example_sources("custom_vjp")
ROOT = EXHIBITS.parent


def run(source: str) -> FakeContext:
    return run_probe("custom_vjp", source)


def check(ctx: FakeContext) -> CustomRuleChecked:
    return ctx.one(CustomRuleChecked)


def flat(values: Any) -> np.ndarray:
    """Nested numbers (``"nan"`` strings, ``None``) as a float64 array."""

    def conv(v: Any) -> Any:
        if isinstance(v, list):
            return [conv(x) for x in v]
        if v is None:
            return np.nan
        return float(v)

    return np.asarray(conv(values), dtype=np.float64)


def fd64(fun: Any, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of a scalar ``fun`` in float64, element by element (own code)."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    with jax.enable_x64(True):
        for i in np.ndindex(x.shape or ()):
            e = np.zeros_like(x)
            e[i] = h
            out[i] = (float(fun(x + e)) - float(fun(x - e))) / (2 * h)
    return out


def test_examples_are_the_shared_cases_verbatim() -> None:
    for name in ("C20_bwd_arity_broken", "C20_int_arg_broken", "C20_nondiff_fixed"):
        mine = EXHIBITS / "custom_vjp" / "examples" / f"{name.lower()}.py"
        assert mine.read_text() == (CASES / f"{name}.py").read_text()


def test_sin_times_x_right_value() -> None:
    source = """
import jax, jax.numpy as jnp

@jax.custom_vjp
def g(x):
    return jnp.sin(x) * x

def g_fwd(x):
    return g(x), (jnp.sin(x), jnp.cos(x), x)

def g_bwd(res, ct):
    s, c, x = res
    return ((c * x + s) * ct,)

g.defvjp(g_fwd, g_bwd)

def f(x):
    return g(x)

args = (1.0,)
"""
    c = check(run(source))
    (a,) = c.arguments
    assert a.custom == pytest.approx(1.3817732906760363, rel=1e-6)
    assert a.autodiff == pytest.approx(1.3817732906760363, rel=1e-6)
    assert a.finite_difference == pytest.approx(1.3817732906760363, rel=1e-6)
    assert c.verdict == "agrees" and c.problems == []


# ---- the examples: custom column == jax.grad(f); autodiff == the plain math; FD in float64 ----

PLAIN: dict[str, Any] = {
    # f's math written without any custom rule: the autodiff truth
    "clip_gradient": lambda x: jnp.sum((3.0 * x) ** 2),
    "softplus": lambda x: jnp.sum(jnp.log(1.0 + jnp.exp(x))),
    "wrong_sign": lambda x, w: jnp.sum(jnp.sin(x) * w),
}


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_example_columns(name: str) -> None:
    source = EXAMPLES[name]
    c = check(run(source))
    s = load_snippet(source)
    argnums = tuple(range(len(s.args)))
    custom = jax.grad(s.f, argnums=argnums)(*s.args)
    plain = jax.grad(PLAIN[name], argnums=argnums)(*s.args)
    assert [a.path for a in c.arguments] == (["x", "w"] if len(s.args) == 2 else ["x"])
    for k, a in enumerate(c.arguments):
        np.testing.assert_array_equal(flat(a.custom), np.asarray(custom[k], np.float64))
        np.testing.assert_array_equal(flat(a.autodiff), np.asarray(plain[k], np.float64))
        others = [np.asarray(v, np.float64) for v in s.args]

        def along(v: np.ndarray, k: int = k, others: list[np.ndarray] = others) -> Any:
            full = list(others)
            full[k] = v
            return PLAIN[name](*full)

        fd = fd64(along, others[k])
        got = flat(a.finite_difference)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_wrong_sign_is_caught() -> None:
    c = check(run(EXAMPLES["wrong_sign"]))
    assert c.verdict == "differs"
    x, w = c.arguments
    assert x.agrees_autodiff is False and x.agrees_fd is False
    assert w.agrees_autodiff is True and w.agrees_fd is True
    s = load_snippet(EXAMPLES["wrong_sign"])
    expected = float(np.max(np.abs(2 * np.cos(np.asarray(s.args[0])) * np.asarray(s.args[1]))))
    assert x.max_abs_diff_autodiff == pytest.approx(expected, rel=1e-6)
    (p,) = [p for p in c.problems if p.kind == "differs_autodiff"]
    assert p.title.startswith("Your rule disagrees with autodiff by 3.51 on argument x")
    assert p.argument == "x"


def test_clip_gradient_differs_on_purpose() -> None:
    ctx = run(EXAMPLES["clip_gradient"])
    c = check(ctx)
    assert c.verdict == "differs"
    (a,) = c.arguments
    s = load_snippet(EXAMPLES["clip_gradient"])
    x = np.asarray(s.args[0], np.float64)
    np.testing.assert_allclose(flat(a.custom), 3 * np.clip(6 * x, -1, 1), rtol=1e-6)
    (p,) = c.problems
    assert p.kind == "differs_autodiff" and "on purpose" in p.explanation
    recorded = ctx.one(CustomCallRecorded)
    assert [(v.path, v.nondiff) for v in recorded.call_args] == [
        ("x", False),
        ("lo", True),
        ("hi", True),
    ]
    assert "custom_vjp_call" in ctx.one(JaxprStaged).jaxpr.text


def test_softplus_rule_beats_autodiff_at_overflow() -> None:
    ctx = run(EXAMPLES["softplus"])
    c = check(ctx)
    (a,) = c.arguments
    assert a.autodiff[-1] == "nan" and a.custom[-1] == 1.0
    assert a.agrees_fd is True and c.verdict == "agrees"
    assert {p.kind for p in c.problems} == {"autodiff_failed"}
    recorded = ctx.one(CustomCallRecorded)
    (t,) = recorded.jvp_check
    s = load_snippet(EXAMPLES["softplus"])
    x = s.args[0]
    rng = np.random.default_rng(0)
    tangent = rng.standard_normal(np.shape(x)).astype(np.float32)
    _, want = jax.jvp(s.namespace["softplus"], (x,), (jnp.asarray(tangent),))
    np.testing.assert_array_equal(flat(t.custom), np.asarray(want, np.float64))
    assert t.autodiff[-1] == "nan"


# ---- the C20 cases ------------------------------------------------------------------------


def expect(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES / f"{name}.expect.json").read_text())
    return data


def test_c20_bwd_arity() -> None:
    e = expect("C20_bwd_arity_broken")
    ctx = run(EXAMPLES["c20_bwd_arity_broken"])
    c = check(ctx)
    assert c.verdict == "error"
    eager, jitted = c.attempts
    assert not eager.ok and eager.error_class == e["error_class"]
    assert eager.message is not None and eager.message.startswith(e["error_first_line"])
    p = c.problems[0]
    assert p.kind == "bwd_structure" and p.severity == "error"
    assert p.error_message == e["error_message"]
    # JAX's traceback ends at the call in f (line 27, said in the explanation); the problem,
    # the attempt chip and the CLI's shown error point at the bwd that returned 2 cotangents:
    # its return (line 19).
    assert p.source is not None and (p.source.line, p.source.function) == (19, "bwd")
    assert eager.source == p.source
    assert f"JAX's traceback ends at line {e['error_user_line']} (f)" in p.explanation
    shown = artefacts.SHOWN_ERRORS(ctx.events)
    assert [(s.computation, s.line) for s in shown] == [
        ("jax.grad(f)", 19),
        ("jax.jit(jax.grad(f))", 8),
    ]
    assert "3 cotangents" in p.title and "(data, s, out_len)" in p.title
    # under jit the int is traced first: JAX's own error, at line 8
    assert not jitted.ok and jitted.message is not None
    assert jitted.message.startswith(e["jit_grad_error"].split(": ", 1)[1])
    assert jitted.source is not None and jitted.source.line == 8
    kinds = [p.kind for p in c.problems]
    assert "int_not_nondiff" in kinds and "jit_failed" in kinds
    assert all(a.custom is None for a in c.arguments)
    assert [flat(a.autodiff).tolist() for a in c.arguments] == [[2.0, 2.0, 2.0], 6.0]


def test_c20_int_arg() -> None:
    e = expect("C20_int_arg_broken")
    ctx = run(EXAMPLES["c20_int_arg_broken"])
    c = check(ctx)
    eager, jitted = c.attempts
    assert eager.ok
    assert [flat(a.custom).tolist() for a in c.arguments] == e["grad"]
    for a, fd in zip(c.arguments, e["finite_difference"], strict=True):
        np.testing.assert_allclose(flat(a.finite_difference), fd, rtol=1e-6)
    assert not jitted.ok and jitted.error_class == e["error_class"]
    # the file name differs: the case ran as C20_int_arg_broken.py, the lab runs <snippet>
    assert jitted.message == e["error_message"].replace("C20_int_arg_broken.py", "<snippet>")
    assert jitted.source is not None and jitted.source.line == e["error_user_line"]
    kinds = {p.kind: p for p in c.problems}
    assert kinds["jit_failed"].title.startswith("jax.grad(f) works eagerly, but jax.jit")
    nd = kinds["int_not_nondiff"]
    assert nd.severity == "error" and "nondiff_argnums=(2,)" in nd.explanation
    assert nd.argument == "out_len"
    assert not ctx.of_type(JaxprStaged)  # tracing f fails as under jit


def test_c20_nondiff_fixed() -> None:
    e = expect("C20_nondiff_fixed")
    ctx = run(EXAMPLES["c20_nondiff_fixed"])
    c = check(ctx)
    assert c.verdict == "agrees" and c.problems == []
    assert all(t.ok for t in c.attempts)
    assert [flat(a.custom).tolist() for a in c.arguments] == e["grad"]
    assert [flat(a.autodiff).tolist() for a in c.arguments] == e["grad"]
    for a, fd in zip(c.arguments, e["finite_difference"], strict=True):
        np.testing.assert_allclose(flat(a.finite_difference), fd, rtol=1e-6)
    assert ctx.one(JaxprStaged).jaxpr.text == e["jaxpr"]
    recorded = ctx.one(CustomCallRecorded)
    assert recorded.nondiff_argnums == [2]
    assert [(r.path, r.aval.short, r.input_path) for r in recorded.residuals] == [
        ("res[0]", "f32[3]", "data"),
        ("res[1]", "f32[]", "s"),
    ]
    assert recorded.rule_names == {"fwd": "fwd", "bwd": "bwd"}
    assert recorded.rule_lines == {"fwd": 14, "bwd": 18}


# ---- the other classic mistakes ------------------------------------------------------------

TEMPLATE = """
import jax, jax.numpy as jnp

@jax.custom_vjp
def g(x, s):
    return jnp.sin(x) * s

def g_fwd(x, s):
    {fwd}

def g_bwd(res, ct):
    {bwd}

g.defvjp(g_fwd, g_bwd)

def f(x, s):
    return jnp.sum(g(x, s))

args = (jnp.array([0.1, 0.2, 0.3]), 2.0)
"""
GOOD_FWD = "return g(x, s), (jnp.cos(x), jnp.sin(x), s)"
GOOD_BWD = "c, sn, s = res\n    return (c * s * ct, jnp.sum(sn * ct))"


def _jax_error(source: str) -> BaseException:
    s = load_snippet(source)
    with pytest.raises(Exception) as info:
        jax.grad(s.f, argnums=(0, 1))(*s.args)
    return info.value


def test_bwd_wrong_shape() -> None:
    bwd = "c, sn, s = res\n    return (c * s * ct, sn * ct)  # not summed: f32[3] for a scalar"
    source = TEMPLATE.format(fwd=GOOD_FWD, bwd=bwd)
    c = check(run(source))
    p = c.problems[0]
    want = _jax_error(source)
    assert p.kind == "bwd_shape" and p.error_class == type(want).__name__ == "ValueError"
    assert p.error_message == str(want)
    assert "at output[1]" in p.title and "float32[3]" in p.title
    # At g_bwd's return (line 13), not the call of g in f (line 18) where JAX's traceback ends.
    assert p.source is not None and (p.source.line, p.source.function) == (13, "g_bwd")
    assert source.splitlines()[12].strip().startswith("return (c * s * ct, sn * ct)")
    assert c.attempts[0].source == p.source  # the chip and the CLI agree with the problem
    assert "JAX's traceback ends at line 18 (f)" in p.explanation


def test_fwd_not_a_pair() -> None:
    source = TEMPLATE.format(fwd="return g(x, s)", bwd=GOOD_BWD)
    ctx = run(source)
    c = check(ctx)
    p = c.problems[0]
    want = _jax_error(source)
    assert p.kind == "fwd_not_pair" and p.error_message == str(want)
    assert p.title == "g_fwd must return a pair (output, residuals)."
    assert ctx.one(CustomCallRecorded).residuals == []


def test_good_rule_agrees() -> None:
    source = TEMPLATE.format(fwd=GOOD_FWD, bwd=GOOD_BWD)
    ctx = run(source)
    c = check(ctx)
    assert c.verdict == "agrees" and c.problems == []
    s = load_snippet(source)
    gx, gs = jax.grad(s.f, argnums=(0, 1))(*s.args)
    np.testing.assert_array_equal(flat(c.arguments[0].custom), np.asarray(gx, np.float64))
    assert c.arguments[1].custom == float(gs)
    assert [r.path for r in ctx.one(CustomCallRecorded).residuals] == ["res[0]", "res[1]", "res[2]"]


def test_no_custom_function_is_invalid_snippet() -> None:
    with pytest.raises(InvalidSnippet, match=r"no `jax\.custom_vjp` or `jax\.custom_jvp`"):
        run("import jax.numpy as jnp\ndef f(x):\n    return jnp.sum(x)\nargs = (jnp.ones(2),)\n")


def test_f_itself_custom() -> None:
    source = """
import jax, jax.numpy as jnp

@jax.custom_jvp
def f(x):
    return jnp.sum(x ** 2)

@f.defjvp
def f_jvp(p, t):
    (x,), (dx,) = p, t
    return f(x), jnp.sum(2 * x * dx)

args = (jnp.array([1.0, -2.0]),)
"""
    c = check(run(source))
    assert c.verdict == "agrees"
    np.testing.assert_allclose(flat(c.arguments[0].custom), [2.0, -4.0])
    np.testing.assert_allclose(flat(c.arguments[0].autodiff), [2.0, -4.0])


# ---- headless -----------------------------------------------------------------------------


def test_cli_print_check(tmp_path: Path) -> None:
    snippet = tmp_path / "wrong_sign.py"
    snippet.write_text(EXAMPLES["wrong_sign"])
    proc = run_cli("run", "custom_vjp", str(snippet), "--print", "check", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    s = load_snippet(EXAMPLES["wrong_sign"])
    gx, gw = jax.grad(s.f, argnums=(0, 1))(*s.args)
    assert out["name"] == "my_sin" and out["verdict"] == "differs"
    # the float32 gradients in float32 digits (-1.7551651, as JAX prints it), the same values
    for printed, g in ((out["arguments"][0], gx), (out["arguments"][1], gw)):
        assert flat(printed["custom"]).astype(np.float32).tolist() == np.asarray(g).tolist()
    assert -1.7551651 in flat(out["arguments"][0]["custom"]).tolist()
    assert out["problems"][0]["kind"] == "differs_autodiff"


# ---- golden: the probe against the plain-JAX goldens of every example ----------------------


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_golden(name: str) -> None:
    gold = json.loads((EXHIBITS / "custom_vjp" / "golden" / f"{name}.json").read_text())
    ctx = run(EXAMPLES[name])
    c = check(ctx)
    eager, jitted = c.attempts
    for attempt, g in ((eager, gold["grad"]), (jitted, gold["jit_grad"])):
        if "value" in g:
            assert attempt.ok
        else:
            assert not attempt.ok and attempt.error_class == g["error_class"]
            assert attempt.message is not None
            assert attempt.message.splitlines()[0] == g["error_first_line"]
    if "value" in gold["grad"]:
        want = gold["grad"]["value"]
        if len(want) == 1 and len(c.arguments) > 1:  # one tuple argument: its leaves
            want = want[0]
        for a, w in zip(c.arguments, want, strict=True):
            np.testing.assert_array_equal(flat(a.custom), flat(w))
    staged = ctx.of_type(JaxprStaged)
    assert (staged[0].jaxpr.text if staged else None) == gold.get("jaxpr")


# ---- a rule that raises: its text, not only its class (fix-review-34 item 5) -------------------

RAISING_RULE = """
import jax
import jax.numpy as jnp


@jax.custom_vjp
def g(x):
    return jnp.sin(x)


def fwd(x):
{fwd_body}


def bwd(res, ct):
{bwd_body}


g.defvjp(fwd, bwd)


def f(x):
    return g(x).sum()


args = (jnp.ones(3),)
"""


@pytest.mark.parametrize(
    ("fwd_body", "bwd_body"),
    [
        (
            "    return jnp.sin(x), x",
            "    raise ValueError('my bwd is broken: residual has the wrong shape')",
        ),
        ("    raise RuntimeError('fwd refuses x: ' + str(x.shape))", "    return (ct * res,)"),
        ("    return jnp.sin(x), x", "    return ct * res"),  # JAX's own error: not a tuple
    ],
    ids=["bwd_raises", "fwd_raises", "bwd_not_tuple"],
)
def test_rule_error_text_in_cli_check_and_events(
    tmp_path: Path, fwd_body: str, bwd_body: str
) -> None:
    source = RAISING_RULE.format(fwd_body=fwd_body, bwd_body=bwd_body)
    s = load_snippet(source)
    with pytest.raises(Exception) as info:  # the truth: what jax.grad raises on its own
        jax.grad(s.f)(*s.args)
    want = str(info.value)
    check = run_probe("custom_vjp", source).one(CustomRuleChecked)
    eager = next(t for t in check.attempts if t.mode == "eager")
    assert not eager.ok and eager.message == want
    assert check.problems[0].error_message == want
    if check.problems[0].kind == "grad_failed":
        assert "as it was raised" in check.problems[0].explanation

    snippet = tmp_path / "raising.py"
    snippet.write_text(source)
    proc = run_cli("run", "custom_vjp", str(snippet), "--print", "check", cwd=ROOT)
    # JAX's refusal is shown (the run finishes) and exits 3: JAX rejected the code.
    assert proc.returncode == 3, proc.stderr
    assert f"JAX raised {type(info.value).__name__}" in proc.stderr
    out = json.loads(proc.stdout)
    assert out["verdict"] == "error"
    printed = {t["mode"]: t for t in out["attempts"]}
    assert printed["eager"]["error_class"] == type(info.value).__name__
    # the file name differs (<snippet> in-process, the path on the CLI): compare the first line
    assert printed["eager"]["message"].splitlines()[0] == want.splitlines()[0]
    assert out["problems"][0]["error_message"].splitlines()[0] == want.splitlines()[0]
