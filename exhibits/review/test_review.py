"""The review exhibit's tests.

Truths: each finding's line is the line of the example where the bug is (found by searching the
example's text for the line, known by construction); each example's fixed version gives no
finding; the tracer error is what plain ``f(*args)`` raises, at its deepest snippet line; the
static/dynamic table is plain ``jax.jit(...).trace(...).args_info``; the per-step traces and
compiles are the ``jax_log_compiles`` lines of the same steps in a fresh Python; the executables
per step are known by construction (one per jitted call, one per eager op). The golden stream is
the probe's; the ``--print`` artefacts have their exact format.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, RunFinished

from exhibits.conftest import CASES, example_sources, jaxscope_run
from exhibits.registry import EXHIBITS

from . import probe
from .artefacts import ARTEFACTS, SHOWN_ERRORS
from .events import EVENTS, ReviewArgsRead, ReviewFindingsFound, ReviewStepRan

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"
SOURCES = example_sources(EXHIBIT)


def line_of(example: str, text: str, source: str | None = None) -> int:
    """The 1-based line of ``example`` that contains ``text`` (exactly one)."""
    lines = (source or SOURCES[example]).splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (example, text, hits)
    return hits[0]


# example -> the findings it must give, as (kind, the text of the line where the bug is)
EXPECTED: dict[str, set[tuple[str, str]]] = {
    "mlp_step": {
        ("BakedConstant", 'h = jnp.tanh(x @ params["w1"] + NOISE)'),
        ("JitInLoop", "grad_fn = jax.jit(jax.value_and_grad(loss_fn))"),
        ("DeviceToHost", 'print("loss", loss.item())'),
        ("HostToDevice", "lambda p, g: p - 0.1 * g"),
    },
    "mlp_step_fixed": set(),
    "loss_branch": {("TracerBoolConversion", "if loss > 1.0:")},
    "numpy_noise": {
        ("ImplicitRandomness", "noise = np.random.normal(size=x.shape)"),
        ("BakedConstant", "h = (x + noise) @ w"),
    },
}

# example -> XLA executables each step launches, by construction: mlp_step calls one jit and
# runs two eager ops (0.1 * g, p - ...) on each of its two parameters; the others are one jit.
EXECUTABLES = {"mlp_step": 1 + 2 * 2, "mlp_step_fixed": 1, "numpy_noise": 1}


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    from exhibits.conftest import run_probe

    return {name: run_probe(EXHIBIT, source) for name, source in SOURCES.items()}


def findings_of(ctx: Any) -> list[Any]:
    return list(ctx.one(ReviewFindingsFound).findings)


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_each_finding_is_at_the_line_of_the_bug(runs: dict[str, Any], example: str) -> None:
    got = {(f.kind, f.line) for f in findings_of(runs[example])}
    want = {(kind, line_of(example, text)) for kind, text in EXPECTED[example]}
    assert got == want
    for f in findings_of(runs[example]):
        assert f.message and f.fix


def test_the_fixed_step_gives_no_finding_and_one_executable(runs: dict[str, Any]) -> None:
    ctx = runs["mlp_step_fixed"]
    assert findings_of(ctx) == []
    assert [s.executables for s in ctx.of_type(ReviewStepRan)] == [1] * probe.STEPS


@pytest.mark.parametrize("example", sorted(EXECUTABLES))
def test_executables_per_step(runs: dict[str, Any], example: str) -> None:
    steps = runs[example].of_type(ReviewStepRan)
    assert len(steps) == probe.STEPS
    assert [s.executables for s in steps] == [EXECUTABLES[example]] * probe.STEPS


def test_the_tracer_error_is_plain_jaxs_at_its_line() -> None:
    ns: dict[str, Any] = {}
    path = EXAMPLES / "loss_branch.py"
    exec(compile(SOURCES["loss_branch"], str(path), "exec"), ns)
    with pytest.raises(jax.errors.TracerBoolConversionError) as info:
        ns["f"](*ns["args"])
    lines = [
        tb.tb_lineno
        for tb in _walk(info.value.__traceback__)
        if tb.tb_frame.f_code.co_filename == str(path)
    ]
    from exhibits.conftest import run_probe

    (finding,) = findings_of(run_probe(EXHIBIT, SOURCES["loss_branch"]))
    assert finding.line == lines[-1]
    assert str(info.value).strip().splitlines()[0] in finding.message


def _walk(tb: Any) -> list[Any]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def _plain_namespace(example: str) -> dict[str, Any]:
    ns: dict[str, Any] = {}
    exec(compile(SOURCES[example], str(EXAMPLES / f"{example}.py"), "exec"), ns)
    return ns


def _short(shape: tuple[int, ...], dtype: Any) -> str:
    """``f32[8,16]`` from a shape and a (float or int) dtype."""
    dt = jnp.dtype(dtype)
    return f"{dt.kind}{dt.itemsize * 8}[{','.join(str(d) for d in shape)}]"


def _args_info_table(
    traced: Any, args: tuple[Any, ...], static: set[int]
) -> list[tuple[bool, str]]:
    """Each argument: static (absent from ``args_info``, its repr) or its leaves' avals."""
    infos = iter(traced.args_info[0])
    out = []
    for i, a in enumerate(args):
        if i in static:
            out.append((True, repr(a)))
        else:
            leaves = jax.tree.leaves(next(infos))
            out.append((False, ", ".join(_short(x.shape, x.dtype) for x in leaves)))
    return out


def _table_of(ctx: Any) -> list[tuple[bool, str]]:
    (fn,) = ctx.one(ReviewArgsRead).functions
    return [(a.static, a.detail) for a in fn.args]


def test_args_table_is_plain_args_info(runs: dict[str, Any]) -> None:
    ns = _plain_namespace("mlp_step_fixed")
    traced = jax.jit(ns["step"], static_argnums=4).trace(*ns["args"])
    assert _table_of(runs["mlp_step_fixed"]) == _args_info_table(traced, ns["args"], {4})
    names = [a.name for a in runs["mlp_step_fixed"].one(ReviewArgsRead).functions[0].args]
    assert names == ["params", "x", "y", "noise", "lr"]
    # mlp_step's inner jit: jax.jit(jax.value_and_grad(loss_fn)) on the step's arguments
    ns = _plain_namespace("mlp_step")
    traced = jax.jit(jax.value_and_grad(ns["loss_fn"])).trace(*ns["args"])
    assert _table_of(runs["mlp_step"]) == _args_info_table(traced, ns["args"], set())
    (fn,) = runs["mlp_step"].one(ReviewArgsRead).functions
    assert fn.line == line_of("mlp_step", "loss, grads = grad_fn(params, x, y)")


# The snippet's steps in a fresh Python with jax_log_compiles: the log lines of each step.
_PLAIN_STEPS = """
import io, json, logging, runpy, sys
import jax
jax.config.update("jax_log_compiles", True)
buf = io.StringIO()
handler = logging.StreamHandler(buf)
handler.setLevel(logging.DEBUG)
logging.getLogger("jax").addHandler(handler)
logging.getLogger("jax").setLevel(logging.DEBUG)
ns = runpy.run_path(sys.argv[1], run_name="snippet")
logs = []
for _ in range(int(sys.argv[2])):
    buf.truncate(0)
    buf.seek(0)
    jax.block_until_ready(ns["f"](*ns["args"]))
    logs.append(buf.getvalue())
open(sys.argv[3], "w").write(json.dumps(logs))
"""


def plain_step_logs(path: Path, steps: int, tmp_path: Path) -> list[str]:
    out = tmp_path / "logs.json"
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN_STEPS, str(path), str(steps), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(out.read_text()))


def _log_counts(log: str) -> tuple[Counter[str], Counter[str]]:
    traces = Counter(re.findall(r"Finished tracing (\S+) for jit", log))
    compiles = Counter(re.findall(r"Finished XLA compilation of (\S+) in", log))
    return traces, compiles


def _golden(example: str) -> list[Any]:
    path = HERE / "golden" / f"{example}.events.jsonl"
    return [EVENT_ADAPTER.validate_json(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("example", ["mlp_step", "mlp_step_fixed", "numpy_noise"])
def test_traces_and_compiles_per_step_are_jax_log_compiles(example: str, tmp_path: Path) -> None:
    logs = plain_step_logs(EXAMPLES / f"{example}.py", probe.STEPS, tmp_path)
    steps = [e for e in _golden(example) if isinstance(e, ReviewStepRan)]
    assert len(steps) == len(logs) == probe.STEPS
    for step, log in zip(steps, logs, strict=True):
        traces, compiles = _log_counts(log)
        assert {c.name: c.count for c in step.traces} == dict(traces)
        assert {c.name: c.count for c in step.compiles} == dict(compiles)


def test_jit_in_loop_counts_are_the_c05_case() -> None:
    """C05 (a jit of a fresh lambda in a loop of 5): JAX traced <lambda> 5 times per call of f
    in a fresh process (the case's expectation); the review calls f STEPS times."""
    from exhibits.conftest import run_probe

    path = CASES / "C05_jit_in_loop_broken.py"
    expect = json.loads(path.with_suffix(".expect.json").read_text())
    ctx = run_probe(EXHIBIT, path.read_text())
    (jit,) = [f for f in findings_of(ctx) if f.kind == "JitInLoop"]
    assert jit.line == line_of("", "jax.jit(lambda v: v + 1)(i)", path.read_text())
    per_call = expect["traces_by_function"]["<lambda>"]
    assert f"traced <lambda> {per_call * probe.STEPS} times" in jit.message
    compiles = expect["compiles_by_function"]["<lambda>"] * probe.STEPS
    assert f"compiled it {compiles} times" in jit.message
    fixed = CASES / "C05_jit_in_loop_fixed.py"
    assert not [
        f for f in findings_of(run_probe(EXHIBIT, fixed.read_text())) if f.kind == "JitInLoop"
    ]


def test_device_to_host_reads_per_step(runs: dict[str, Any]) -> None:
    assert [s.host_reads for s in runs["mlp_step"].of_type(ReviewStepRan)] == [1] * probe.STEPS
    (read,) = [f for f in findings_of(runs["mlp_step"]) if f.kind == "DeviceToHost"]
    assert read.message.startswith(".item() on an array (f32[])")
    assert f"in {probe.STEPS} of {probe.STEPS} steps" in read.message


def test_hooks_are_undone(runs: dict[str, Any]) -> None:
    import numpy as np

    assert runs  # the runs are done
    x = jnp.ones(())
    assert float(x) == 1.0
    assert np.asarray.__module__ == "numpy"
    config: Any = jax.config  # its flags are attributes mypy does not know
    assert not config.jax_transfer_guard_host_to_device
    assert sys.gettrace() is None or "review" not in repr(sys.gettrace())


def test_findings_artefact_format(runs: dict[str, Any]) -> None:
    text = ARTEFACTS["findings"](runs["mlp_step"].events)
    assert text is not None
    data = json.loads(text)
    assert [sorted(d) for d in data] == [["fix", "kind", "line", "message"]] * 4
    assert [d["line"] for d in data] == sorted(d["line"] for d in data)
    assert json.loads(ARTEFACTS["findings"](runs["mlp_step_fixed"].events) or "null") == []


def test_args_artefact_format(runs: dict[str, Any]) -> None:
    text = ARTEFACTS["args"](runs["mlp_step_fixed"].events)
    assert text is not None
    (fn,) = json.loads(text)
    assert fn["function"] == "step" and fn["line"] is None
    assert fn["args"][4] == {"index": 4, "name": "lr", "static": True, "detail": "0.1"}
    assert fn["args"][1] == {"index": 1, "name": "x", "static": False, "detail": "f32[32,8]"}
    assert ARTEFACTS["args"](runs["loss_branch"].events) is None


def test_shown_errors_exit_kinds(runs: dict[str, Any]) -> None:
    shown = SHOWN_ERRORS(runs["loss_branch"].events)
    assert [(s.error_class, s.kind) for s in shown] == [("TracerBoolConversion", "error")]
    assert {s.kind for s in SHOWN_ERRORS(runs["mlp_step"].events)} == {"finding"}
    assert SHOWN_ERRORS(runs["mlp_step_fixed"].events) == []


@pytest.mark.parametrize("example", sorted(SOURCES))
def test_golden_is_the_probes_stream(runs: dict[str, Any], example: str) -> None:
    own = {cls.model_fields["type"].default for cls in EVENTS}
    golden = _golden(example)
    assert isinstance(golden[-1], RunFinished)
    assert [e.type for e in golden if e.type in own] == [
        e.type for e in runs[example].events if isinstance(e, EventBase) and e.type in own
    ]
    want = [(f.kind, f.line) for f in findings_of(runs[example])]
    (done,) = [e for e in golden if isinstance(e, ReviewFindingsFound)]
    assert [(f.kind, f.line) for f in done.findings] == want


def test_cli_prints_findings_and_exits_3() -> None:
    proc = jaxscope_run(EXHIBIT, EXAMPLES / "mlp_step.py", "--print", "findings")
    assert proc.returncode == 3, proc.stderr
    kinds = {d["kind"] for d in json.loads(proc.stdout)}
    assert kinds == {k for k, _ in EXPECTED["mlp_step"]}
    assert EXHIBITS[EXHIBIT].default_example == "mlp_step"


# case -> the findings it must give, as (kind, the text of the line where the bug is)
CASE_FINDINGS: dict[str, set[tuple[str, str]]] = {
    "RV01_svi_loop_broken": {("DeviceToHost", "losses.append(jax.device_get(loss))")},
    "RV01_svi_loop_fixed": set(),
    "RV02_numpy_noise_broken": {("ImplicitRandomness", "noise = np.random.normal(size=x.shape)")},
    "RV02_numpy_noise_fixed": set(),
}


@pytest.mark.parametrize("case", sorted(CASE_FINDINGS))
def test_review_cases_against_their_plain_jax_truth(case: str) -> None:
    """The RV cases (cases/README.md): findings at the lines of the bug; per-step traces and
    compiles equal the case's ``jax_log_compiles`` counts of a fresh process (snippet functions:
    the eager ops' programs depend on what the process compiled before); RV01's re-wrapped
    ``jit(body_fn)`` is traced once, so no JitInLoop; RV02's numpy noise is the same on every
    call under jit and not without it, which is what the finding says."""
    from exhibits.conftest import run_probe

    path = CASES / f"{case}.py"
    source = path.read_text()
    expect = json.loads(path.with_suffix(".expect.json").read_text())
    ctx = run_probe(EXHIBIT, source)
    got = {(f.kind, f.line) for f in findings_of(ctx)}
    assert got == {(k, line_of("", text, source)) for k, text in CASE_FINDINGS[case]}
    steps = ctx.of_type(ReviewStepRan)
    assert len(steps) == len(expect["steps"]) == probe.STEPS
    names = {n for s in expect["steps"] for n in s["traces_by_function"]}
    for step, want in zip(steps, expect["steps"], strict=True):
        traces = {c.name: c.count for c in step.traces if c.name in names}
        assert traces == want["traces_by_function"]
        compiles = {c.name: c.count for c in step.compiles if c.name[4:-1] in names}
        assert compiles == {
            k: v for k, v in want["compiles_by_function"].items() if k[4:-1] in names
        }
    if case == "RV02_numpy_noise_broken":
        assert expect["same_output_twice"] and not expect["same_output_twice_without_jit"]


DONATING = """
import functools
import jax
import jax.numpy as jnp


@functools.partial(jax.jit, donate_argnums=0)
def f(w, x):
    return w - 0.1 * jnp.mean(x) * w


args = (jnp.ones((16,)), jnp.ones((32, 16)))
"""


def test_a_donating_step_runs_every_step_on_fresh_copies() -> None:
    """Plain JAX deletes a donated argument; a loop passes the new state in. Each step (and the
    guarded rerun) gets copies, so the review runs, with one executable per step and no
    finding; the caller's arrays are left alone."""
    from exhibits.conftest import run_probe

    ctx = run_probe(EXHIBIT, DONATING)
    assert [s.executables for s in ctx.of_type(ReviewStepRan)] == [1] * probe.STEPS
    assert findings_of(ctx) == []
    assert not ctx.snippet.args[0].is_deleted()


FLOAT_IN_JIT = """
import jax
import jax.numpy as jnp


@jax.jit
def f(w, x):
    loss = jnp.mean((x @ w) ** 2)
    print("loss", float(loss))
    return w - 0.1 * w


args = (jnp.ones((4,)), jnp.ones((8, 4)))
"""


def test_float_of_a_traced_value_is_jaxs_concretization_error_at_its_line() -> None:
    from exhibits.conftest import run_probe

    ns: dict[str, Any] = {}
    exec(compile(FLOAT_IN_JIT, "float_in_jit.py", "exec"), ns)
    with pytest.raises(jax.errors.ConcretizationTypeError) as info:
        ns["f"](*ns["args"])
    assert not isinstance(info.value, jax.errors.TracerBoolConversionError)
    (finding,) = findings_of(run_probe(EXHIBIT, FLOAT_IN_JIT))
    assert finding.kind == "ConcretizationTypeError"
    assert finding.line == line_of("", 'print("loss", float(loss))', FLOAT_IN_JIT)
    assert str(info.value).strip().splitlines()[0].rstrip(".") in finding.message


def test_an_unfinished_transfer_search_says_so() -> None:
    from .findings import transfers

    found: list[tuple[int | None, str]] = [
        (3, "INVALID_ARGUMENT: Disallowed host-to-device transfer: aval=x, dst_sharding=y")
    ]
    (done,) = transfers(found, "args = (1,)\n", complete=True)
    assert done.message.endswith("Disallowed host-to-device transfer: aval=x")
    (cut,) = transfers(found, "args = (1,)\n", complete=False)
    assert cut.message.endswith(
        "(the search stopped after 1 lines: the step may make more transfers)"
    )
    (args_line,) = transfers([(None, "INVALID_ARGUMENT: x")], "import jax\nargs = (1.0,)\n")
    assert args_line.line == 2
