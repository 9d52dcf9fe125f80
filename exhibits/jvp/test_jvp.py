"""Tests of the jvp exhibit's probe: every artefact against JAX itself.

The probe runs in-process (``exhibits/conftest.py``). Truths: ``jax.make_jaxpr`` of ``jax.jvp``
and ``jax.jvp`` on a separately loaded copy of the snippet (``golden/regen.py``'s helpers, plain
JAX), the closed form cos(1)·1 + sin(1), and the golden files.
"""

from __future__ import annotations

import ast
import json
import math
import runpy
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.protocol import JaxprStaged, RunFailed, Stage, StageStarted, ValueView
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet

from exhibits.conftest import EXHIBITS, FakeContext, run_probe
from exhibits.jvp import probe
from exhibits.jvp.events import JvpJaxprStaged, JvpRuleApplied
from exhibits.jvp.golden.regen import EXAMPLES, golden, jvp_parts, load
from testkit import run_cli

GOLDEN = EXHIBITS / "jvp" / "golden"
EXAMPLE_PATHS = {p.stem: p for p in EXAMPLES}
SIN_X = 1.3817732906760363  # d/dx sin(x)·x at 1 = cos(1)·1 + sin(1)


def number(preview: str | None) -> np.ndarray:
    """A value preview (numpy's printout, never summarised for these sizes) as an array."""
    assert preview is not None and "..." not in preview
    return np.asarray(ast.literal_eval(preview), dtype=np.float64)


def truth(source_path: Path) -> tuple[str, list[Any], list[Any]]:
    """(JVP jaxpr text, primal outputs, tangent outputs) from plain JAX."""
    f_closed, primals, tangents = jvp_parts(load(source_path))
    text = str(jax.make_jaxpr(lambda p, t: jax.jvp(f_closed, p, t))(primals, tangents))
    p_out, t_out = jax.jvp(f_closed, primals, tangents)
    return text, jax.tree.leaves(p_out), jax.tree.leaves(t_out)


@pytest.fixture(scope="module", params=sorted(EXAMPLE_PATHS))
def example(request: pytest.FixtureRequest) -> tuple[Path, FakeContext]:
    path = EXAMPLE_PATHS[request.param]
    return path, run_probe("jvp", path.read_text())


def test_sin_times_x_derivative_at_one() -> None:
    ctx = run_probe("jvp", EXAMPLE_PATHS["sin_times_x"].read_text())
    staged = ctx.one(JvpJaxprStaged)
    assert float(number(staged.tangents_out[0].preview)) == pytest.approx(SIN_X, rel=1e-6)
    assert float(number(staged.primals_out[0].preview)) == pytest.approx(math.sin(1.0), rel=1e-6)
    sin_step, mul_step = ctx.of_type(JvpRuleApplied)
    assert (sin_step.primitive, mul_step.primitive) == ("sin", "mul")
    assert float(number(sin_step.tangents_out[0].preview)) == pytest.approx(math.cos(1.0), 1e-6)
    assert float(number(mul_step.tangents_out[0].preview)) == pytest.approx(SIN_X, rel=1e-6)
    # The mul step's inputs: sin(1) and 1 with tangents cos(1) and 1 (the tangent of x).
    assert [float(number(v.preview)) for v in mul_step.primals_in] == pytest.approx(
        [math.sin(1.0), 1.0], rel=1e-6
    )
    assert [float(number(v.preview)) for v in mul_step.tangents_in] == pytest.approx(
        [math.cos(1.0), 1.0], rel=1e-6
    )
    # The rule JAX ran for sin is defined in lax.py, and sin's rule emits sin, cos, mul.
    assert sin_step.rule is not None and sin_step.rule.table == "primitive_jvps"
    assert sin_step.rule.file == "jax/_src/lax/lax.py" and sin_step.rule.line
    assert [t.split(" = ")[1].split()[0] for t in sin_step.tangent_eqns] == ["sin", "cos", "mul"]
    assert sin_step.source is not None and sin_step.source.line == 7


def test_every_example_against_jax_jvp(example: tuple[Path, FakeContext]) -> None:
    path, ctx = example
    text, p_out, t_out = truth(path)
    staged = ctx.one(JvpJaxprStaged)
    assert staged.jaxpr.text == text
    assert staged.attributed
    assert staged.matches_jax_jvp and staged.max_abs_diff is not None
    assert staged.max_abs_diff <= 1e-5
    for shown, ref in zip(
        [*staged.primals_out, *staged.tangents_out], [*p_out, *t_out], strict=True
    ):
        ref_arr = np.asarray(ref, np.float64)
        np.testing.assert_allclose(number(shown.preview), ref_arr, rtol=1e-5, atol=1e-5)
    for shown, ref in zip(
        [*staged.jax_primals_out, *staged.jax_tangents_out], [*p_out, *t_out], strict=True
    ):
        np.testing.assert_allclose(number(shown.preview), np.asarray(ref), rtol=1e-6, atol=1e-6)


def test_one_step_per_primal_eqn_and_every_jvp_eqn_attributed(
    example: tuple[Path, FakeContext],
) -> None:
    _, ctx = example
    primal = ctx.one(JaxprStaged).jaxpr
    steps = ctx.of_type(JvpRuleApplied)
    staged = ctx.one(JvpJaxprStaged)
    assert [s.index for s in steps] == list(range(len(primal.eqns)))
    assert [s.primitive for s in steps] == [e.primitive for e in primal.eqns]
    # Steps come between the primal jaxpr and the whole JVP jaxpr.
    kinds = [type(e) for e in ctx.events if isinstance(e, (JaxprStaged, JvpRuleApplied))]
    assert kinds[0] is JaxprStaged and ctx.events[-1] is staged
    # Each JVP eqn belongs to exactly one step, in order, and the step shows its text.
    origin = staged.eqn_origin
    assert len(origin) == len(staged.jaxpr.eqns)
    attributed = [o for o in origin if o is not None]
    assert attributed == sorted(attributed)
    for step in steps:
        mine = [k for k, o in enumerate(origin) if o == step.index]
        assert step.jvp_eqn_indices == mine
        assert step.tangent_eqns == [staged.jaxpr.eqns[k].text for k in mine]
        for k in mine:  # the emitted eqns carry the primal eqn's user line
            assert staged.jaxpr.eqns[k].source == primal.eqns[step.index].source


def test_step_values_chain_into_the_outputs(example: tuple[Path, FakeContext]) -> None:
    """The last steps' outputs are the function's outputs (values at args, from JAX)."""
    path, ctx = example
    _, p_out, t_out = truth(path)
    primal = ctx.one(JaxprStaged).jaxpr
    steps = ctx.of_type(JvpRuleApplied)
    produced: dict[str, tuple[ValueView, ValueView]] = {}
    for s in steps:
        for p, t in zip(s.primals_out, s.tangents_out, strict=True):
            assert p.var is not None
            produced[p.var] = (p, t)
    for out_var, p_ref, t_ref in zip(primal.outvars, p_out, t_out, strict=True):
        p, t = produced[out_var.name]
        np.testing.assert_allclose(number(p.preview), np.asarray(p_ref), rtol=1e-5, atol=1e-5)
        if t.zero:
            assert not np.any(np.asarray(t_ref))
        else:
            np.testing.assert_allclose(number(t.preview), np.asarray(t_ref), rtol=1e-5, atol=1e-5)


ZEROS = """
import jax.numpy as jnp

def f(x, n):
    k = jnp.arange(3.0)
    return jnp.sum(x * k * n)

args = (jnp.ones(3), 2)
"""


def test_symbolic_zero_tangents_are_shown_as_such() -> None:
    ctx = run_probe("jvp", ZEROS)
    steps = ctx.of_type(JvpRuleApplied)
    staged = ctx.one(JvpJaxprStaged)
    # The int argument n gets the float0 zero tangent.
    assert [t.dtype for t in staged.tangents_in] == ["float32", "float0"]
    # jnp.arange(3.0) involves no tangent: JAX binds it alone, no rule runs.
    first = steps[0]
    assert first.mechanism == "zero_tangents" and first.rule is None
    assert all(t.zero for t in first.tangents_out)
    # Some step multiplies by n: that tangent goes in as a symbolic zero.
    assert any(t.zero for s in steps if s.mechanism == "rule" for t in s.tangents_in)
    text, _, t_out = truth_from_source(ZEROS)
    assert staged.jaxpr.text == text
    assert float(number(staged.tangents_out[0].preview)) == pytest.approx(float(t_out[0]))


def truth_from_source(source: str, tmp: Path | None = None) -> tuple[str, list[Any], list[Any]]:
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(source, "<snippet>", "exec"), ns)
    f_closed, primals, tangents = jvp_parts(ns)
    text = str(jax.make_jaxpr(lambda p, t: jax.jvp(f_closed, p, t))(primals, tangents))
    p_out, t_out = jax.jvp(f_closed, primals, tangents)
    return text, jax.tree.leaves(p_out), jax.tree.leaves(t_out)


CUSTOM_TANGENTS = """
import jax.numpy as jnp

def f(x, y):
    return jnp.sin(x) * y

args = (1.0, 3.0)
tangents = (2.0, 0.0)
"""


def test_snippet_tangents_choose_the_direction() -> None:
    ctx = run_probe("jvp", CUSTOM_TANGENTS)
    staged = ctx.one(JvpJaxprStaged)
    expected = 2.0 * math.cos(1.0) * 3.0
    assert float(number(staged.tangents_out[0].preview)) == pytest.approx(expected, rel=1e-6)
    assert [number(t.preview).item() for t in staged.tangents_in] == [2.0, 0.0]


def test_tangents_with_the_wrong_structure_fail_clearly() -> None:
    with pytest.raises(InvalidSnippet, match="same pytree structure"):
        run_probe("jvp", CUSTOM_TANGENTS.replace("tangents = (2.0, 0.0)", "tangents = (2.0,)"))


def test_static_argnums_and_custom_jvp_steps() -> None:
    """attention has a static int argument; mlp_loss has relu (a custom_jvp function)."""
    ctx = run_probe("jvp", EXAMPLE_PATHS["mlp_loss"].read_text())
    custom = [s for s in ctx.of_type(JvpRuleApplied) if s.primitive == "custom_jvp_call"]
    assert custom and all(s.mechanism == "custom_jvp" for s in custom)
    rule = custom[0].rule
    assert rule is not None and rule.file == "jax/_src/nn/functions.py" and "relu" in rule.name
    assert custom[0].note is not None  # an eqn with an inner jaxpr is one step


def test_golden_files_are_current() -> None:
    for path in EXAMPLES:
        stored = json.loads((GOLDEN / f"{path.stem}.json").read_text())
        fresh = golden(path)
        assert stored["jvp_jaxpr"] == fresh["jvp_jaxpr"]
        # Up to float32 rounding of the largest tangent: the goldens were recorded on another
        # CPU, whose XLA code orders float32 sums differently (last-bit differences).
        want = np.asarray(stored["tangents_out"][0], np.float64)
        np.testing.assert_allclose(
            np.asarray(fresh["tangents_out"][0], np.float64),
            want,
            rtol=1e-6,
            atol=1e-6 * float(np.abs(want).max(initial=1.0)),
        )


def test_golden_matches_the_probe(example: tuple[Path, FakeContext]) -> None:
    path, ctx = example
    stored = json.loads((GOLDEN / f"{path.stem}.json").read_text())
    staged = ctx.one(JvpJaxprStaged)
    assert staged.jaxpr.text == stored["jvp_jaxpr"]
    assert len(staged.jaxpr.eqns) == stored["num_eqns"]


def test_cli_prints_the_jvp_jaxpr(tmp_path: Path) -> None:
    path = EXAMPLE_PATHS["sin_times_x"]
    out = run_cli("run", "jvp", str(path), "--print", "jvp_jaxpr")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == truth(path)[0]


# ---- errors: what plain jax.jvp raises, explained in terms of jvp --------------------------

C20 = EXHIBITS / "custom_vjp" / "examples"  # the same files as the shared C20 cases


def _failure(source: str) -> tuple[BaseException, list[Stage], RunFailed]:
    """The exception the probe raised, the stages it entered, and the runner's RunFailed for it
    (reported at the last stage entered, as the runner does)."""
    snippet = load_snippet(source)
    ctx = FakeContext(snippet=snippet)
    with pytest.raises(Exception) as info:
        probe.run(ctx)
    stages = [e.stage for e in ctx.events if isinstance(e, StageStarted)]
    return info.value, stages, classify(info.value, stages[-1], snippet.f)


@pytest.mark.parametrize(
    "name", ["c20_int_arg_broken", "c20_bwd_arity_broken", "c20_nondiff_fixed"]
)
def test_jvp_of_a_custom_vjp_reports_what_jax_jvp_raises(name: str) -> None:
    """JAX's own forward-mode error, whether or not tracing fails first (an int argument of a
    custom_vjp used as a shape makes jax.make_jaxpr fail, but jax.jvp refuses the call first)."""
    source = (C20 / f"{name}.py").read_text()
    exc, stages, failed = _failure(source)
    # The truth: plain eager jax.jvp on a separately loaded copy of the file, ones as tangents.
    ns = runpy.run_path(str(C20 / f"{name}.py"))
    primals = ns["args"]
    with pytest.raises(Exception) as plain:
        jax.jvp(ns["f"], primals, jax.tree.map(np.ones_like, primals))
    assert type(exc) is type(plain.value)
    assert str(exc) == str(plain.value)
    assert "can't apply forward-mode autodiff (jvp) to a custom_vjp function" in str(exc)
    assert stages[-1] == "run"
    assert failed.kind == "user_exception" and failed.error_class == "TypeError"
    assert failed.source is not None and failed.source.function == "f"
    assert failed.explanation is not None and failed.fix is not None
    assert "jax.jvp" in failed.explanation and "custom_vjp" in failed.explanation
    assert "grad" not in failed.explanation and "jit" not in failed.explanation


def test_a_tracing_error_stays_when_eager_jvp_works() -> None:
    """Python `if` on a value: eager jax.jvp works, jax.make_jaxpr (which the exhibit needs)
    does not; the exhibit reports the tracing error at the trace stage."""
    source = "def f(x):\n    if x > 0:\n        return x * 2.0\n    return -x\n\nargs = (1.0,)\n"
    ns: dict[str, Any] = {}
    exec(source, ns)
    assert jax.jvp(ns["f"], (1.0,), (1.0,))[1] == 2.0
    exc, stages, failed = _failure(source)
    assert isinstance(exc, jax.errors.TracerBoolConversionError)
    assert stages == ["trace"]
    assert failed.kind == "tracer_error" and failed.source is not None
    assert failed.source.line == 2


@pytest.mark.parametrize(
    ("tangents", "kind", "words"),
    [
        ("(jnp.ones(4),)", "invalid_snippet", "same pytree structure"),
        ("(jnp.ones(4), jnp.ones(3))", "user_exception", "different primal and tangent shapes"),
        ("(jnp.ones(3, dtype=jnp.int32), jnp.ones(3))", "user_exception", "dtypes must be equal"),
    ],
)
def test_a_wrong_tangents_setting_points_at_its_line(tangents: str, kind: str, words: str) -> None:
    source = (
        "import jax.numpy as jnp\n\n\n"
        "def f(x, y):\n"
        "    return jnp.sum(x * y)\n\n\n"
        "args = (jnp.ones(3), jnp.ones(3))\n"
        f"tangents = {tangents}\n"
    )
    with pytest.raises(Exception) as info:
        run_probe("jvp", source)
    failed = classify(info.value, "run", load_snippet(source).f)
    assert failed.kind == kind and words in failed.message
    assert failed.source is not None and failed.source.line == 9
    assert "as a whole" not in (failed.explanation or "")
    # JAX's own words for the last two, from plain jax.jvp with the same tangents.
    if kind == "user_exception":
        s = load_snippet(source)
        with pytest.raises(type(info.value)) as plain:
            jax.jvp(s.f, s.args, s.namespace["tangents"])
        assert str(plain.value) == str(info.value)


# Longer than the step-by-step capture (jvp_steps.MAX_STEPS = 2,000 primal eqns): two eqns an
# iteration, 2,200 in all.
LOOP = """
import jax.numpy as jnp

def f(x):
    for _ in range(1_100):
        x = jnp.sin(x) * 0.5
    return x

args = (jnp.ones(3),)
"""


def test_a_program_past_the_step_cap_says_how_many_eqns_have_no_step() -> None:
    from jaxscope.internals import jvp_steps

    ctx = run_probe("jvp", LOOP)
    ns = load_snippet(LOOP)
    n_eqns = len(jax.make_jaxpr(ns.f)(*ns.args).jaxpr.eqns)
    assert n_eqns == 2_200 > jvp_steps.MAX_STEPS
    steps = ctx.of_type(JvpRuleApplied)
    staged = ctx.one(JvpJaxprStaged)
    assert [s.index for s in steps] == list(range(jvp_steps.MAX_STEPS))
    assert staged.steps_left_out == n_eqns - len(steps) == 200
    assert json.loads(staged.model_dump_json())["steps_left_out"] == 200
    # under the cap the field is left off the wire (the goldens do not change)
    small = run_probe("jvp", ZEROS).one(JvpJaxprStaged)
    assert small.steps_left_out == 0 and "steps_left_out" not in json.loads(small.model_dump_json())
