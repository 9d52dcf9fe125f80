"""The recompile hunt against JAX itself: per step, compiled or not equals JAX's own compile log
(counted here independently, by ``golden/regen.py``'s plain run and live); causes against JAX's
explain-cache-miss text; C05 reproduced; run twice, same answer; the CLI's ``recompiles``."""

from __future__ import annotations

import importlib
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from jaxscope.protocol import RunOptions
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, FakeContext, run_probe
from exhibits.recompile_hunt.events import TrainingStepObserved, TrainingStopped
from exhibits.recompile_hunt.golden.regen import plain_run
from testkit import run_cli

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "examples"
PRESETS = sorted(p.stem for p in EXAMPLES.glob("*.py"))
ROOT = HERE.parents[1]
FINISHED = re.compile(r"^Finished XLA compilation of (.+) in ([0-9.]+) sec$")
ID = re.compile(r"id=\d+")
AT = re.compile(r"TRACING CACHE MISS at [^\n]*? \(.*?\):")


def steps_of(source: str, options: RunOptions | None = None) -> list[TrainingStepObserved]:
    return run_probe("recompile_hunt", source, options).of_type(TrainingStepObserved)


def summary(steps: list[TrainingStepObserved]) -> list[tuple[Any, ...]]:
    return [
        (s.step, s.compiled, s.kind, s.cause, s.source, [c.fun_name for c in s.compiles])
        for s in steps
    ]


@pytest.mark.parametrize("name", PRESETS)
def test_compiled_steps_equal_jax_compile_log(name: str) -> None:
    source = (EXAMPLES / f"{name}.py").read_text()
    steps = steps_of(source)
    golden = json.loads((HERE / "golden" / f"{name}.json").read_text())
    live = plain_run(source)
    for truth in (golden, live):
        if truth["steps"]:  # the snippet has `step`: compare step by step
            assert len(steps) == len(truth["steps"])
            assert [s.step for s in steps if s.compiled] == truth["compiled_steps"]
            for s, t in zip(steps, truth["steps"], strict=True):
                assert [c.fun_name for c in s.compiles] == t["compiled"]
                logged = [m.group(1) for line in s.log if (m := FINISHED.match(line))]
                assert logged == t["compiled"]
        else:  # no `step`: every jit call is a step; the user's compiles equal the log's
            user = [c for s in steps for c in s.compiles if c.user]
            assert [c.fun_name for c in user] == [
                n for n in truth["compiled"] if n == "jit(<lambda>)"
            ]
    # the compile timer is JAX's own elapsed time (the log line and the monitoring event share it)
    for s in steps:
        logged_ms = [float(m.group(2)) * 1e3 for line in s.log if (m := FINISHED.match(line))]
        timed = [c.timers_ms.get("compile", 0.0) for c in s.compiles]
        assert timed == pytest.approx(logged_ms, abs=1e-3)
        assert s.duration_ms > 0


def _explain_mentions(step: TrainingStepObserved) -> None:
    """Our diff names what JAX's explain text names."""
    text = step.explanation
    if step.kind == "new_function":
        assert "never seen function" in text
    elif step.kind in ("shape", "dtype", "weak_type"):
        assert "different input types" in text
        for e in step.entries:
            if e.differs:
                assert f"* at {e.name}, now" in text
                if step.kind == "weak_type":
                    assert "weak_type" in text
    elif step.kind == "first":
        assert "never seen function" in text
    elif step.kind == "pytree":
        assert "different input pytree" in text
    elif step.kind == "static":
        assert "Static(val=" in text
    elif step.kind == "context":
        assert "Tracing context doesn't match" in text
        for e in step.entries:
            if e.differs:
                assert f"{e.name.removeprefix('context ')} differs" in text
    elif step.kind == "placement":
        assert text == ""  # JAX's explanation covers tracing only: the diff says more


# More loops, one per cause: (source, the kinds of the compiled steps in order).
TABLE: dict[str, tuple[str, list[str]]] = {
    "static": (
        """\
import jax
import jax.numpy as jnp
from functools import partial

@partial(jax.jit, static_argnums=1)
def step(x, n):
    return x * n

def f(k):
    x = jnp.ones(3)
    for i in range(k):
        x = step(x, i % 2)
    return x

args = (4,)
""",
        ["first", "static"],
    ),
    "context": (
        """\
import jax
import jax.numpy as jnp

@jax.jit
def step(x):
    return x @ x

def f(k):
    x = jnp.ones((3, 3))
    for i in range(k):
        with jax.default_matmul_precision("highest" if i % 2 else "default"):
            x = step(x)
    return x

args = (3,)
""",
        ["first", "context"],
    ),
    "placement": (
        """\
import jax
import jax.numpy as jnp

@jax.jit
def step(x):
    return x + 1

def f(k):
    x = jnp.ones(3)
    for i in range(k):
        x = step(jax.device_put(x, jax.devices()[0]) if i % 2 else jnp.asarray(x) + 0)
    return x

args = (3,)
""",
        ["first", "placement"],
    ),
    "eager": (
        """\
import jax
import jax.numpy as jnp

def step(x):
    return jnp.sin(x) * 2

def f(k):
    x = jnp.ones(3)
    for i in range(k):
        x = step(x)
    return x

args = (3,)
""",
        ["eager"],
    ),
    "pytree": (
        """\
import jax
import jax.numpy as jnp

@jax.jit
def step(state):
    new = {k: v + 1 for k, v in state.items()}
    new["extra"] = jnp.zeros(())
    return new

def f(k):
    s = {"a": jnp.ones(3)}
    for i in range(k):
        s = step(s)
    return s

args = (3,)
""",
        ["first", "pytree"],
    ),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_table_of_causes(name: str) -> None:
    source, kinds = TABLE[name]
    steps = steps_of(source)
    truth = plain_run(source)
    assert [s.step for s in steps if s.compiled] == truth["compiled_steps"]
    for s, t in zip(steps, truth["steps"], strict=True):
        assert [c.fun_name for c in s.compiles] == t["compiled"]
    assert [s.kind for s in steps if s.compiled] == kinds
    for s in steps:
        if s.compiled:
            _explain_mentions(s)


@pytest.mark.parametrize("name", PRESETS)
def test_causes_agree_with_jax_explain(name: str) -> None:
    steps = steps_of((EXAMPLES / f"{name}.py").read_text())
    golden = json.loads((HERE / "golden" / f"{name}.json").read_text())
    for s in steps:
        if s.compiled:
            _explain_mentions(s)
            assert (s.source is not None and s.fix is not None) or s.kind == "first"
    if golden["steps"]:
        for s, t in zip(steps, golden["steps"], strict=True):
            # the plain run's call site is its counting wrapper; the C05 test checks call sites
            ours = AT.sub("TRACING CACHE MISS at ", ID.sub("id=<N>", s.explanation))
            theirs = AT.sub("TRACING CACHE MISS at ", "\n".join(dict.fromkeys(t["explain"])))
            assert ours == theirs


def test_preset_causes() -> None:
    """The presets teach what they say (kinds and lines read from the snippets' own text)."""
    ragged = steps_of((EXAMPLES / "ragged_batch.py").read_text())
    assert [s.kind for s in ragged if s.compiled] == ["first", "shape"]
    assert {e.name for e in ragged[2].entries if e.differs} == {"x", "y"}
    assert "Pad the batch" in (ragged[2].fix or "")
    weak = steps_of((EXAMPLES / "weak_type_state.py").read_text())
    assert [s.kind for s in weak if s.compiled] == ["first", "weak_type"]
    (row,) = [e for e in weak[1].entries if e.differs]
    assert row.name == "velocity['b']" and row.before == "f32[] weak" and row.now == "f32[]"
    fresh_src = (EXAMPLES / "fresh_closure.py").read_text()
    fresh = steps_of(fresh_src)
    lines = fresh_src.splitlines()
    call_line = next(i for i, t in enumerate(lines, 1) if "return update(params)" in t)
    assert all(s.kind == "new_function" for s in fresh[1:])
    assert all(s.source is not None and s.source.line == call_line for s in fresh)
    assert "Hoist the jit" in (fresh[1].fix or "")
    clean = steps_of((EXAMPLES / "clean_loop.py").read_text())
    assert [s.compiled for s in clean] == [True] + [False] * (len(clean) - 1)


def test_jaxpr_is_what_jax_traced() -> None:
    import jax

    source = (EXAMPLES / "clean_loop.py").read_text()
    steps = steps_of(source)
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(source, "<snippet>", "exec"), ns)
    params = {"w": ns["np"].zeros(3, ns["np"].float32), "b": ns["np"].float32(0.0)}
    traced = ns["step"].trace(params, ns["X"][:8], ns["Y"][:8]).jaxpr
    assert steps[0].jaxpr is not None
    assert steps[0].jaxpr.text == str(traced)
    del jax


def _case(name: str) -> tuple[str, dict[str, Any]]:
    return (CASES / f"{name}.py").read_text(), json.loads(
        (CASES / f"{name}.expect.json").read_text()
    )


@pytest.mark.parametrize("name", ["C05_jit_in_loop_broken", "C05_jit_in_loop_fixed"])
def test_c05_reproduces(name: str) -> None:
    source, expect = _case(name)
    steps = steps_of(source)
    assert len(steps) == expect["returned"]  # f(5) makes 5 calls, one per loop iteration
    compiled = [c for s in steps for c in s.compiles if c.user]
    assert len(compiled) == expect["compiles_by_function"]["<lambda>"]
    assert {c.function for c in compiled} == set(expect["compiles_by_function"])
    misses = [
        ID.sub("id=<N>", s.explanation).replace("<snippet>", f"{name}.py")
        for s in steps
        if s.explanation
    ]
    assert misses == expect["cache_misses"]
    recompiles = [s for s in steps if s.compiled and s.kind != "first"]
    if expect["recompile_cause"] is None:
        assert recompiles == []
    else:
        assert recompiles
        for s in recompiles:
            assert (s.cause or "").replace("<snippet>", f"{name}.py") == expect["recompile_cause"]


def test_run_twice_same_answer() -> None:
    source = (EXAMPLES / "ragged_batch.py").read_text()
    first = summary(steps_of(source))
    steps_of((EXAMPLES / "fresh_closure.py").read_text())  # something else in between
    second = summary(steps_of(source))
    assert first == second
    c05, _ = _case("C05_jit_in_loop_broken")
    assert summary(steps_of(c05)) == summary(steps_of(c05))


def test_steps_option_sets_n() -> None:
    source = (EXAMPLES / "ragged_batch.py").read_text()
    steps = steps_of(source, RunOptions(steps=7))
    assert len(steps) == 7
    assert [s.step for s in steps if s.compiled] == plain_run(source, steps=7)["compiled_steps"]


def test_cli_prints_recompiles() -> None:
    path = EXAMPLES / "weak_type_state.py"
    out = run_cli("run", "recompile_hunt", str(path), "--print", "recompiles", cwd=ROOT)
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    truth = plain_run(path.read_text())
    assert sorted(int(k) for k in printed) == truth["compiled_steps"]
    assert "weak type at velocity['b']" in printed["1"]


def test_loop_error_propagates_after_the_steps_that_ran() -> None:
    source = (
        (EXAMPLES / "ragged_batch.py")
        .read_text()
        .replace(
            "        s = starts[i % len(starts)]\n",
            "        s = starts[i % len(starts)]\n"
            "        if i == 3:\n"
            "            raise ValueError('stop')\n",
        )
    )
    probe: Any = importlib.import_module("exhibits.recompile_hunt.probe")
    ctx = FakeContext(snippet=load_snippet(source))
    with pytest.raises(ValueError, match="stop"):
        probe.run(ctx)
    assert [s.step for s in ctx.of_type(TrainingStepObserved)] == [0, 1, 2]
    assert importlib.import_module("jax").jit.__module__ == "jax._src.api"  # the watch is undone


class _TimedContext(FakeContext):
    """Records when each event was emitted (``time.perf_counter``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.emitted_at: list[tuple[Any, float]] = []

    def emit(self, event: Any) -> None:
        self.emitted_at.append((event, time.perf_counter()))
        super().emit(event)


def test_each_step_is_emitted_as_it_finishes() -> None:
    """Step k's event is out before step k + 1 starts (a run that times out keeps its steps)."""
    source = (
        (EXAMPLES / "ragged_batch.py")
        .read_text()
        .replace(
            "        s = starts[i % len(starts)]\n",
            "        STARTS.append(time.perf_counter())\n        s = starts[i % len(starts)]\n",
        )
    )
    source = "import time\nSTARTS = []\n" + source
    probe: Any = importlib.import_module("exhibits.recompile_hunt.probe")
    ctx = _TimedContext(snippet=load_snippet(source))
    probe.run(ctx)
    starts = ctx.snippet.f.__globals__["STARTS"]
    emitted = [t for e, t in ctx.emitted_at if isinstance(e, TrainingStepObserved)]
    assert len(starts) == len(emitted) > 2
    for k in range(len(starts) - 1):
        assert emitted[k] < starts[k + 1]
    assert not ctx.of_type(TrainingStopped)  # the loop finished inside its budget


BUDGET_LOOP = """
import time
import jax
import jax.numpy as jnp


@jax.jit
def step(x):
    return x + 1.0


def f(n):
    x = jnp.zeros(3)
    while True:  # never ends on its own; `except Exception` does not swallow the stop
        try:
            x = step(x)
        except Exception:
            pass
        time.sleep(0.02)


args = (1,)
"""


def test_time_budget_stops_the_loop_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    probe: Any = importlib.import_module("exhibits.recompile_hunt.probe")
    monkeypatch.setattr(probe, "TIME_BUDGET_S", 1.0)
    t0 = time.perf_counter()
    ctx = run_probe("recompile_hunt", BUDGET_LOOP)
    assert time.perf_counter() - t0 < 15
    steps = ctx.of_type(TrainingStepObserved)
    stop = ctx.one(TrainingStopped)
    assert ctx.events[-1] is stop  # after the last step
    # How many steps fit in the budget depends on the machine's load (the first one compiles:
    # on a busy CI box that alone can use the budget); that the loop stops, and says so, does not.
    assert stop.steps_run == len(steps) >= 1
    assert stop.budget_s == 1.0
    assert stop.elapsed_s >= 1.0
    assert [s.step for s in steps if s.compiled] == [0]  # one compile, then cache hits
    assert importlib.import_module("jax").jit.__module__ == "jax._src.api"  # the watch is undone


def test_most_steps_fit_the_runs_wall_limit() -> None:
    """200 steps that each compile (fresh_closure, the most `steps` allows) finish inside the
    runner's wall limit: the loop stops at its budget, the steps that ran are all there."""
    source = (EXAMPLES / "fresh_closure.py").read_text().replace("args = (6,)", "args = (200,)")
    out = run_cli("run", "recompile_hunt", "-", "--json", stdin=source, cwd=ROOT)
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert events[-1]["type"] == "run_finished", events[-1]
    steps = [e for e in events if e["type"] == "training_step_observed"]
    stopped = [e for e in events if e["type"] == "training_stopped"]
    if len(steps) < 200:  # a fast machine may run all 200 inside the budget
        assert stopped and stopped[0]["steps_run"] == len(steps)
    assert [s["step"] for s in steps] == list(range(len(steps)))
    assert all(s["compiled"] and s["kind"] in ("first", "new_function") for s in steps)


ENDLESS_DRIVER = """
import jax
import jax.numpy as jnp


@jax.jit
def step(p):
    return p * 0.5 + 1.0


def f(n):
    p = jnp.zeros(3)
    for i in range(STEPS):  # ignores n
        p = step(p)
    return p


args = (3,)
"""


def test_a_loop_longer_than_the_step_cap_is_stopped_there() -> None:
    """A driver that calls ``step`` more than 200 times (it ignores ``n``) is stopped at its
    201st call, as the time budget would stop it: it used to run on unwatched, past the run's
    wall limit (``range(10**9)``: a timeout and no ``training_stopped``)."""
    probe: Any = importlib.import_module("exhibits.recompile_hunt.probe")
    assert probe.MAX_STEPS == 200
    ctx = run_probe("recompile_hunt", ENDLESS_DRIVER.replace("STEPS", "1000"))
    steps = ctx.of_type(TrainingStepObserved)
    stop = ctx.one(TrainingStopped)
    assert ctx.events[-1] is stop
    assert [s.step for s in steps] == list(range(200))
    assert (stop.steps_run, stop.max_steps) == (200, 200)
    assert stop.requested_n == 3  # f(3): the loop ignores n
    assert stop.elapsed_s < probe.TIME_BUDGET_S
    assert [s.step for s in steps if s.compiled] == [0]


def test_cli_recompiles_says_the_step_cap_stopped_the_loop() -> None:
    """clean_loop with ``args = (10**9,)``: ``--print recompiles`` keeps step 0's cause and adds
    the stop: the cap (200 steps), the requested n, in words."""
    source = (EXAMPLES / "clean_loop.py").read_text().replace("args = (6,)", "args = (10**9,)")
    out = run_cli("run", "recompile_hunt", "-", "--print", "recompiles", stdin=source, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert list(printed) == ["0", "stopped"]
    stopped = printed["stopped"]
    assert stopped["reason"] == "max_steps"
    assert (stopped["steps_run"], stopped["max_steps"], stopped["requested_n"]) == (
        200,
        200,
        10**9,
    )
    assert "f was called with n = 1000000000" in stopped["message"]
    assert "step cap stopped it" in stopped["message"]
    assert "use n" not in stopped["message"]


def test_a_loop_of_exactly_the_step_cap_finishes() -> None:
    ctx = run_probe("recompile_hunt", ENDLESS_DRIVER.replace("STEPS", "200"))
    assert len(ctx.of_type(TrainingStepObserved)) == 200
    assert not ctx.of_type(TrainingStopped)
