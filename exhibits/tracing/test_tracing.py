"""Tests of the tracing exhibit's probe: every artefact against JAX itself.

The probe runs in-process (``exhibits/conftest.py``); the truths come from plain JAX calls on a
separately loaded copy of the snippet (``jax.make_jaxpr``, ``jax.jit``), from numpy, or from the
shared cases' expected values (``cases/*.expect.json``).
"""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.protocol import (
    JaxprStaged,
    RunOptions,
    StageStarted,
    StageTimed,
    StdoutPrinted,
)
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, EXHIBITS, FakeContext, example_sources, run_probe
from exhibits.tracing import probe as tracing_probe
from exhibits.tracing.events import EqnRecorded, JitCalled
from exhibits.tracing.options import CallSpec

EXAMPLES = example_sources("tracing")
GOLDEN = EXHIBITS / "tracing" / "golden"


def truth_jaxpr(source: str) -> Any:
    """``jax.make_jaxpr`` on a fresh copy of the snippet (static kwargs closed over)."""
    s = load_snippet(source)
    static_kw = {k: v for k, v in s.kwargs.items() if k in s.static_argnames}
    dyn_kw = {k: v for k, v in s.kwargs.items() if k not in s.static_argnames}
    fun = functools.partial(s.f, **static_kw) if static_kw else s.f
    return jax.make_jaxpr(fun, static_argnums=s.static_argnums)(*s.args, **dyn_kw)


def staged(ctx: FakeContext) -> JaxprStaged:
    return ctx.one(JaxprStaged)


WEAK = """
import jax.numpy as jnp

def f(x, y):
    z = jnp.sin(x) * 2.0
    w = z + y
    return jnp.sum(w), jnp.array([1.0, 2.0, 3.0])

args = (jnp.ones(3), 1.0)
"""

STATIC = """
import jax.numpy as jnp

def f(x, n, *, scale, mode):
    for _ in range(n):
        x = x * scale
    return jnp.tanh(x) if mode == "tanh" else x

args = (jnp.ones(2), 3)
kwargs = {"scale": jnp.float32(0.5), "mode": "tanh"}
static_argnums = (1,)
static_argnames = ("mode",)
"""

HELPER = """
import jax.numpy as jnp

def g(t):
    return jnp.tanh(t) * 2.0

def f(x):
    a = g(x)
    b = g(a + 1.0)
    return a + b

args = (jnp.ones(3),)
"""

COND = """
import jax
import jax.numpy as jnp

def f(x):
    return jax.lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x)

args = (jnp.ones(3),)
"""

KEY_WHILE = """
import jax
import jax.numpy as jnp
import numpy as np

def f(key, x, i):
    noise = jax.random.normal(key, x.shape)
    n, y = jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))
    return y + noise, i * 2, n

args = (jax.random.key(0), jnp.ones(3), np.arange(4, dtype=np.uint8))
"""

SNIPPETS = {"weak": WEAK, "static": STATIC, "helper": HELPER, "cond": COND, "key_while": KEY_WHILE}
CASE_SNIPPETS = {
    name: (CASES / f"{name}.py").read_text()
    for name in ("C17_print_broken", "C17_debug_print_fixed")
    if (CASES / f"{name}.py").exists()
}
ALL = {**EXAMPLES, **SNIPPETS, **CASE_SNIPPETS}


@pytest.fixture(scope="module")
def runs() -> dict[str, FakeContext]:
    """Each snippet run once through the probe (shared by the tests below)."""
    return {name: run_probe("tracing", source) for name, source in ALL.items()}


@pytest.mark.parametrize("name", sorted(ALL))
def test_jaxpr_text_is_make_jaxpr(runs: dict[str, FakeContext], name: str) -> None:
    assert staged(runs[name]).jaxpr.text == str(truth_jaxpr(ALL[name]))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_match_golden(runs: dict[str, FakeContext], name: str) -> None:
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    view = staged(runs[name]).jaxpr
    assert view.text == golden["jaxpr"]
    assert len(view.eqns) == golden["num_eqns"]
    assert sorted({e.primitive for e in view.eqns}) == golden["primitives"]


@pytest.mark.parametrize("name", sorted(ALL))
def test_recorded_eqns_are_the_staged_eqns(runs: dict[str, FakeContext], name: str) -> None:
    ctx = runs[name]
    recorded = ctx.of_type(EqnRecorded)
    view = staged(ctx).jaxpr
    truth = truth_jaxpr(ALL[name]).jaxpr
    assert [r.index for r in recorded] == list(range(len(truth.eqns)))
    assert [r.primitive for r in recorded] == [e.primitive.name for e in truth.eqns]
    for r, e, v in zip(recorded, truth.eqns, view.eqns, strict=True):
        assert [a.short for a in r.in_avals] == [
            x.aval.str_short(short_dtypes=True) for x in e.invars
        ]
        assert [a.weak_type for a in r.in_avals] == [x.aval.weak_type for x in e.invars]
        assert [a.short for a in r.out_avals] == [
            x.aval.str_short(short_dtypes=True) for x in e.outvars
        ]
        assert r.source == v.source
        assert set(r.params) == set(e.params)
    # Streamed live: every eqn_recorded comes inside the trace stage, before jaxpr_staged.
    types = [e.type for e in ctx.events]
    first_stage = types.index("stage_started")
    assert all(
        first_stage < i < types.index("jaxpr_staged")
        for i, t in enumerate(types)
        if t == "eqn_recorded"
    )


@pytest.mark.parametrize("name", sorted(ALL))
def test_structured_view_agrees_with_text(runs: dict[str, FakeContext], name: str) -> None:
    view = staged(runs[name]).jaxpr
    truth = truth_jaxpr(ALL[name])
    # The header line is built from the same names: "{ lambda consts; invars. let"
    consts = " ".join(f"{c.var.name}:{c.var.aval.short}" for c in view.constvars)
    invars = " ".join(f"{v.name}:{v.aval.short}" for v in view.invars)
    flat = re.sub(r"\s+", " ", view.text)  # JAX wraps long lines
    # (jaxprs used more than once are printed first: "let _uniform = { lambda ... } in")
    top = flat[flat.index(f"{{ lambda {consts}; {invars}. let") :]
    assert top == flat or flat.startswith("let ")
    outs = ", ".join(v.name for v in view.outvars)
    assert flat.endswith(f"in ({outs}{',' if len(view.outvars) == 1 else ''}) }}")
    assert len(view.eqns) == len(truth.jaxpr.eqns)
    for eqn in view.eqns:
        # Single-line eqns appear verbatim in the jaxpr text (same variable names).
        if "\n" not in eqn.text:
            assert f"    {eqn.text}\n" in view.text
        assert [v.name for v in eqn.outvars] == [
            s.split(":")[0] for s in eqn.text.split(" = ")[0].split()
        ] or not eqn.outvars
        for inner in eqn.inner_jaxprs:
            # Inner jaxprs print nested in the text, wrapped at other columns: compare
            # without any whitespace.
            assert re.sub(r"\s+", "", inner.text) in re.sub(r"\s+", "", view.text)
    assert view.effects == sorted(str(e) for e in truth.effects)
    for v, t in zip(view.invars, truth.jaxpr.invars, strict=True):
        assert v.aval.weak_type == t.aval.weak_type
        assert v.aval.shape == list(t.aval.shape)
        assert v.aval.dtype == t.aval.dtype.name


def test_weak_types_constvars_literals_sources(runs: dict[str, FakeContext]) -> None:
    view = staged(runs["weak"]).jaxpr
    # y = 1.0 is a Python float: a weak-typed f32[] invar.
    assert [v.aval.weak_type for v in view.invars] == [False, True]
    assert jax.typeof(1.0).weak_type
    # The closed-over jnp.array is a constvar holding [1, 2, 3].
    assert len(view.constvars) == 1
    const = view.constvars[0]
    assert const.var.aval.short == "f32[3]"
    np.testing.assert_array_equal(ast.literal_eval(const.value_preview), [1.0, 2.0, 3.0])
    mul = next(e for e in view.eqns if e.primitive == "mul")
    literal = [v for v in mul.invars if v.literal]
    assert [v.name for v in literal] == ["2.0:f32[]"]
    assert f"= mul {mul.invars[0].name} 2.0:f32[]" in mul.text
    sources = {e.primitive: e.source for e in view.eqns}
    assert sources["sin"] is not None and sources["sin"].line == 5
    assert sources["sin"].function == "f"
    assert sources["add"] is not None and sources["add"].line == 6
    assert sources["reduce_sum"] is not None and sources["reduce_sum"].line == 7


def test_helper_lines_are_innermost_snippet_frames(runs: dict[str, FakeContext]) -> None:
    view = staged(runs["helper"]).jaxpr
    tanhs = [e for e in view.eqns if e.primitive == "tanh"]
    assert [(e.source.line, e.source.function) for e in tanhs if e.source] == [(5, "g"), (5, "g")]


def test_static_arguments_are_closed_over(runs: dict[str, FakeContext]) -> None:
    view = staged(runs["static"]).jaxpr
    # n=3 (static_argnums) unrolls three muls; mode (static_argnames) selects tanh; the
    # dynamic keyword argument `scale` is an invar.
    assert [e.primitive for e in view.eqns].count("mul") == 3
    assert "tanh" in [e.primitive for e in view.eqns]
    assert [v.aval.short for v in view.invars] == ["f32[2]", "f32[]"]


def test_inner_jaxprs(runs: dict[str, FakeContext]) -> None:
    cond = next(e for e in staged(runs["cond"]).jaxpr.eqns if e.primitive == "cond")
    assert [i.param for i in cond.inner_jaxprs] == ["branches", "branches"]
    truth = next(e for e in truth_jaxpr(COND).jaxpr.eqns if e.primitive.name == "cond")
    assert len(truth.params["branches"]) == 2

    def anonymous(text: str) -> str:  # variable names are global in the text: drop them
        return re.sub(r"\b[a-z]+\b(?=[:, )]|$)", "v", text)

    texts = [anonymous(i.text) for i in cond.inner_jaxprs]
    truths = [anonymous(str(b.jaxpr)) for b in truth.params["branches"]]
    assert texts == truths  # same jaxprs up to variable names (which are global in the text)
    if "C17_print_broken" in runs:
        jit = staged(runs["C17_print_broken"]).jaxpr.eqns[0]
        assert jit.primitive == "jit"
        assert [(i.param, i.name) for i in jit.inner_jaxprs] == [("jaxpr", "f")]


@pytest.mark.skipif(not CASE_SNIPPETS, reason="shared cases not present")
@pytest.mark.parametrize("case", ["C17_print_broken", "C17_debug_print_fixed"])
def test_c17_prints_per_call(case: str) -> None:
    expect = json.loads((CASES / f"{case}.expect.json").read_text())
    ctx = run_probe("tracing", CASE_SNIPPETS[case], RunOptions(calls=[CallSpec(change="same")]))
    assert staged(ctx).jaxpr.text == expect["jaxpr"]
    calls = ctx.of_type(JitCalled)
    assert [c.printed for c in calls] == expect["stdout_per_call"]
    assert [c.traced for c in calls] == [True, False]
    assert [c.cache_size for c in calls] == [1, 1]
    assert "never seen function" in calls[0].explanation
    assert calls[1].explanation == ""
    # The runner's view of the same text: stdout_printed attributed to each call stage.
    printed = {e.call_index: e.text for e in ctx.of_type(StdoutPrinted) if e.stage == "call"}
    assert [printed.get(i, "") for i in range(2)] == expect["stdout_per_call"]
    trace_prints = [e.text for e in ctx.of_type(StdoutPrinted) if e.stage == "trace"]
    if case == "C17_print_broken":
        assert trace_prints == ["JitTracer(float32[3])\n"]  # printed while tracing
    else:
        assert trace_prints == []


def test_call_sequence_shape_dtype_expr() -> None:
    source = CASE_SNIPPETS.get("C17_print_broken") or WEAK
    options = RunOptions(
        calls=[
            CallSpec(change="same"),
            CallSpec(change="shape"),
            CallSpec(change="shape"),  # grows again from args: f32[4] again, a hit
            CallSpec(change="dtype"),
            CallSpec(change="expr", expr="(jnp.zeros(5), jnp.ones(5))"),
            CallSpec(change="same"),
        ]
    )
    ctx = run_probe("tracing", source, options)
    calls = ctx.of_type(JitCalled)
    assert [c.call_index for c in calls] == list(range(7))
    assert [c.change for c in calls] == ["same", "same", "shape", "shape", "dtype", "expr", "same"]
    assert [c.traced for c in calls] == [True, False, True, False, True, True, False]
    assert [c.cache_size for c in calls] == [1, 1, 2, 2, 3, 4, 4]
    assert [[a.short for a in c.arg_avals] for c in calls] == [
        ["f32[3]", "f32[3]"],
        ["f32[3]", "f32[3]"],
        ["f32[4]", "f32[4]"],
        ["f32[4]", "f32[4]"],
        ["f16[3]", "f16[3]"],
        ["f32[5]", "f32[5]"],
        ["f32[3]", "f32[3]"],
    ]
    # JAX's own words for the misses.
    assert "now f32[4] and before f32[3]" in calls[2].explanation
    assert "now f16[3] and before" in calls[4].explanation
    assert all(c.explanation == "" for c in calls if not c.traced)
    timed = ctx.of_type(StageTimed)
    assert [(t.stage, t.fun_name) for t in timed] == [("trace", "f")]
    assert timed[0].event == "/jax/core/compile/jaxpr_trace_duration"
    # Each call ran in its own stage, in order.
    stages = [(e.stage, e.call_index) for e in ctx.of_type(StageStarted)]
    assert stages == [("trace", None)] + [("call", i) for i in range(7)]


TWO_ARGS = """import jax.numpy as jnp
def f(x, y):
    return jnp.sum(x * y)
args = (jnp.ones(3), jnp.ones(3))
"""


@pytest.mark.parametrize(
    ("expr", "during", "explained"),
    [
        ("(1/0,)", "while evaluating", "Evaluating the arguments you typed for call #1"),
        ("(jnp.ones(2),)", "while calling f with", "Calling `f` with the arguments you typed"),
    ],
)
def test_typed_call_arguments_are_blamed_not_a_snippet_line(
    expr: str, during: str, explained: str
) -> None:
    # The "call again" expression comes from the UI: its failure names no snippet line (before:
    # f's def line, with "JAX raised this while handling f as a whole").
    snippet = load_snippet(TWO_ARGS)
    options = RunOptions(calls=[CallSpec(change="expr", expr=expr)])
    with pytest.raises(Exception) as info:
        run_probe("tracing", TWO_ARGS, options)
    ns: dict[str, Any] = {}
    exec(TWO_ARGS, ns)
    with pytest.raises(Exception) as truth:  # the same call, plain Python and JAX
        jax.jit(ns["f"])(*eval(expr, ns))
    failed = classify(info.value, "call", snippet.f)
    assert (failed.error_class, failed.message) == (type(truth.value).__name__, str(truth.value))
    assert failed.source is None and failed.traceback == []
    assert failed.during == f"{during} the arguments you typed for call #1"
    assert failed.explanation is not None and failed.explanation.startswith(explained)
    assert f"(`{expr}`)" in failed.explanation
    assert "as a whole" not in failed.explanation


def test_typed_call_arguments_that_do_not_parse_are_blamed_on_the_call_box() -> None:
    # Before: "'(' was never closed (<string>, line 1)" with nothing saying where it came from.
    snippet = load_snippet(TWO_ARGS)
    options = RunOptions(calls=[CallSpec(change="expr", expr="(jnp.ones(3)")])
    with pytest.raises(SyntaxError) as info:
        run_probe("tracing", TWO_ARGS, options)
    with pytest.raises(SyntaxError) as truth:  # Python's own words for the same text
        compile("(jnp.ones(3)", "<typed arguments>", "eval")
    failed = classify(info.value, "call", snippet.f)
    assert failed.message == str(truth.value) == "'(' was never closed (<typed arguments>, line 1)"
    assert failed.source is None and failed.traceback == []
    assert failed.during == "while reading the arguments you typed for call #1"
    assert failed.explanation is not None
    assert failed.explanation.startswith(
        "The arguments you typed for call #1 (`(jnp.ones(3)`) are not valid Python"
        " ('(' was never closed at column 1)."
    )


def test_typed_call_arguments_reaching_a_line_of_f_point_at_it() -> None:
    # The typed arguments are fine for the call but f's line 3 rejects them: that line is shown.
    snippet = load_snippet(TWO_ARGS)
    options = RunOptions(calls=[CallSpec(change="expr", expr="(jnp.ones(2), jnp.ones(3))")])
    with pytest.raises(TypeError) as info:
        run_probe("tracing", TWO_ARGS, options)
    failed = classify(info.value, "call", snippet.f)
    assert failed.source is not None and failed.source.line == 3
    assert "incompatible shapes" in failed.message


def test_grown_values_and_weak_scalars() -> None:
    plan_src = WEAK
    ctx = run_probe("tracing", plan_src, RunOptions(calls=[CallSpec(change="shape")]))
    calls = ctx.of_type(JitCalled)
    # x (a bare array argument) grows from 3 to 4; y = 1.0 (a weak-typed Python scalar) is not
    # an array argument, so it stays a weak f32[].
    assert [a.short for a in calls[1].arg_avals] == ["f32[4]", "f32[]"]
    assert [a.weak_type for a in calls[1].arg_avals] == [False, True]
    assert calls[1].traced


def test_new_shape_grows_the_data_not_the_parameters() -> None:
    """mlp_loss: params (a dict) keep their shapes, x and labels grow from 5 rows to 6, so the
    call traces again and succeeds (growing the weights too would break ``x @ w1``)."""
    src = EXAMPLES["mlp_loss"]
    calls = run_probe("tracing", src, RunOptions(calls=[CallSpec(change="shape")])).of_type(
        JitCalled
    )
    before, after = ([a.short for a in c.arg_avals] for c in calls)
    assert before[:4] == after[:4]  # b1, b2, w1, w2 (dict leaves in sorted key order)
    assert before[4:] == ["f32[5,8]", "i32[5]"]
    assert after[4:] == ["f32[6,8]", "i32[6]"]
    assert calls[1].traced and calls[1].cache_size == 2


def test_keys_are_kept_and_unsigned_ints_narrow_to_int16() -> None:
    options = RunOptions(calls=[CallSpec(change="shape"), CallSpec(change="dtype")])
    calls = run_probe("tracing", KEY_WHILE, options).of_type(JitCalled)
    assert [[a.short for a in c.arg_avals] for c in calls] == [
        ["key<fry>[]", "f32[3]", "u8[4]"],
        ["key<fry>[]", "f32[4]", "u8[5]"],
        ["key<fry>[]", "f16[3]", "i16[4]"],
    ]
    assert [c.traced for c in calls] == [True, True, True]


PARTIAL = """
import functools
import jax.numpy as jnp

def g(x, scale):
    print("tracing g")
    return x * scale

f = functools.partial(g, scale=3.0)
args = (jnp.ones(2),)
"""


def test_partial_f_is_named_as_jax_names_it() -> None:
    ctx = run_probe("tracing", PARTIAL, RunOptions(calls=[CallSpec(change="same")]))
    assert staged(ctx).fun_name == "g"
    assert staged(ctx).jaxpr.text == str(truth_jaxpr(PARTIAL))
    calls = ctx.of_type(JitCalled)
    assert [(c.traced, c.printed) for c in calls] == [(True, "tracing g\n"), (False, "")]


def test_tracer_bool_conversion_propagates() -> None:
    source = (CASES / "C01_escape_jit_broken.py").read_text()
    with pytest.raises(jax.errors.TracerBoolConversionError) as info:
        run_probe("tracing", source)
    expect = json.loads((CASES / "C01_escape_jit_broken.expect.json").read_text())
    assert str(info.value).splitlines()[0] == expect["error_first_line"]


def test_examples_run_as_scripts_have_f_and_args() -> None:
    for name, source in EXAMPLES.items():
        snippet = load_snippet(source)
        assert callable(snippet.f) and snippet.args, name
        assert "jaxscope" not in source
        assert Path(EXHIBITS / "tracing" / "examples" / f"{name}.py").exists()


def test_cache_miss_explanation_names_no_jaxscope_frame() -> None:
    """JAX's explain-cache-misses text for a new shape, without jaxscope's own call site."""
    src = (CASES / "C17_print_broken.py").read_text()
    calls = run_probe("tracing", src, RunOptions(calls=[CallSpec(change="shape")])).of_type(
        JitCalled
    )
    miss = calls[1].explanation
    assert miss.startswith("TRACING CACHE MISS:\n")
    assert "* at w, now f32[4] and before f32[3]" in miss
    assert miss.count("* at w, now f32[4]") == 1  # one message per call, not one per cache
    assert "probe.py" not in miss and "jaxscope" not in miss


def test_a_tracer_leak_is_an_unexpected_tracer_error_after_tracing_finished() -> None:
    # The reviewer's leak: a jitted helper keeps its tracer in a global list and f uses it.
    # Tracing f finishes (the leaked tracer becomes a constvar); jax.jit(f)'s call fails. The
    # page's banner is chosen by the event's error_class (view-model failureBanner), so the
    # class, stage and (absent) frames must be JAX's, not a concretization error's.
    path = Path(__file__).parents[2] / "frontend" / "test-fixtures" / "snippets" / "tracer_leak.py"
    source = path.read_text()
    snippet = load_snippet(source)
    ctx = FakeContext(snippet=snippet, options=RunOptions())
    with pytest.raises(jax.errors.UnexpectedTracerError) as info:
        tracing_probe.run(ctx)
    ns: dict[str, Any] = {}
    exec(compile(source, "<snippet>", "exec"), ns)  # the truth: plain JAX on a fresh copy
    with pytest.raises(jax.errors.UnexpectedTracerError) as truth:
        jax.jit(ns["f"])(*ns["args"])
    failed = classify(info.value, "call", snippet.f)
    assert (failed.kind, failed.error_class) == ("tracer_error", "UnexpectedTracerError")
    assert failed.error_class == type(truth.value).__name__
    decorator = source.splitlines().index("@jax.jit") + 1
    assert f"was scale at <snippet>:{decorator} traced for jit" in str(truth.value)
    assert f"was scale at <snippet>:{decorator} traced for jit" in failed.message
    # no snippet frame: the source is only f's def line (the banner claims no line for it)
    assert failed.traceback == []
    assert failed.source is not None
    assert failed.source.line == source.splitlines().index("def f(x):") + 1
    # tracing f finished: the staged jaxpr is JAX's, the leaked tracer one of its constvars
    view = staged(ctx).jaxpr
    assert view.text == str(jax.make_jaxpr(ns["f"])(*ns["args"]))
    assert [c.value_preview for c in view.constvars] == [repr(ns["seen"][0])]
    assert "Tracer" in repr(ns["seen"][0])
