"""The JAX worker template's idle work (design 0076): probes imported and the shipped examples
traced between requests, with no backend and no thread made; forks of a warm template give the
same events as forks of a cold one; and what a user waits for leaves the server at once.

The suite runs with the warm-up off (``conftest.py``: ``JAXSCOPE_TEMPLATE_WARM=0``); these tests
turn it on for their own templates (the template key holds the switch, ``forked.template_for``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from typing import Any, cast

import pytest
from jaxscope.protocol import (
    EventModel,
    JaxprStaged,
    JaxprView,
    RunFinished,
    RunRequest,
    RunStarted,
    StageStarted,
)
from jaxscope.sandbox import forked, zygote
from jaxscope.sandbox.forked import WARM_SWITCH, zygote_problem
from jaxscope.sandbox.request_loop import serve_requests
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import worker_env
from jaxscope.settings import Limits

from exhibits.registry import EXHIBITS
from testkit import fresh_json, run_async, run_cli, sample

# In a fresh interpreter: the template's own task list run as the template runs it, then what it
# left (a backend? threads?) and whether a later trace of a warmed example finds JAX's helper
# traces cached (``watching_traces``: a cache hit opens no jaxpr frame). ``cold`` is a tracing
# example traced before any warm-up, in the same process, and ``hot`` the same after it.
IDLE_WORK = """
import json, os, sys
from pathlib import Path
import jax
from jaxscope.internals.recording import watching_traces
from jaxscope.internals.warm_traces import backend_started
from jaxscope.sandbox import runner, zygote
runner._preload_jax()
threads = len(os.listdir("/proc/self/task"))
examples = Path(sys.argv[1])

def frames(name):
    ns = {"__name__": "again"}
    exec(compile((examples / f"{name}.py").read_text(), name, "exec"), ns)
    with watching_traces() as names:
        jax.make_jaxpr(ns["f"], static_argnums=ns.get("static_argnums", ()))(*ns["args"])
    return len(names)

# Before the warm-up: make_jaxpr of conv_net in a process that traced nothing (no backend yet:
# its args are numpy arrays).
cold = frames("conv_net")
from jaxscope.internals.rule_tables import table_sizes
from exhibits.registry import EXHIBITS
tasks = zygote._idle_tasks("jax", True)
probes = sum(e.worker == "jax" for e in EXHIBITS.values())
outcomes = {label: task() for label, task in tasks[:probes]}
tables = [table_sizes()]
outcomes.update({label: task() for label, task in tasks[probes:]})
tables.append(table_sizes())
print(json.dumps({
    "outcomes": outcomes,
    "backend": backend_started(),
    "tables": tables,
    "threads": [threads, len(os.listdir("/proc/self/task"))],
    "cold": cold,
    "hot": frames("conv_net"),
    "warm": {name: [frames(name), frames(name)] for name in ("mlp_loss", "attention", "rnn_scan")},
}))
"""


def test_the_idle_work_imports_the_probes_and_traces_the_examples_leaving_no_backend() -> None:
    tracing = EXHIBITS["tracing"].example_paths()
    said = fresh_json(IDLE_WORK, next(iter(tracing.values())).parent)
    outcomes: dict[str, str] = said["outcomes"]
    jax_exhibits = [e for e in EXHIBITS.values() if e.worker == "jax"]
    # Every JAX probe imported, in the registry's order, before any example is traced.
    labels = list(outcomes)
    assert labels[: len(jax_exhibits)] == [f"exhibits.{e.id}.probe" for e in jax_exhibits]
    assert {outcomes[f"exhibits.{e.id}.probe"] for e in jax_exhibits} == {"imported"}
    # Every tracing example is traced; the exhibits' default examples come first.
    traced = labels[len(jax_exhibits) :]
    assert all(outcomes[str(path)] == "warm" for path in tracing.values()), outcomes
    defaults = [
        str(e.example_paths()[e.default_example])
        for e in jax_exhibits
        if e.default_example in e.example_paths()
    ]
    assert traced[: len(set(defaults))] == list(dict.fromkeys(defaults))
    # No shipped example changes what every fork would inherit (environment, config, cwd); one
    # that registers rules for a primitive of its own is put back (transpose's
    # no_transpose_rule), and the rule tables are as the probes' imports left them.
    for outcome in outcomes.values():
        if outcome.startswith("skipped: it changed "):
            changed = outcome.removeprefix("skipped: it changed ").split(", ")
            assert all(c.startswith(("ad.", "batching.", "mlir.")) for c in changed), outcome
    assert said["tables"][0] == said["tables"][1]
    # Examples of errors, and those whose body needs a backend, are skipped, never fatal.
    assert set(outcomes.values()) <= {"imported", "warm"} | {
        v for v in outcomes.values() if v.startswith("skipped: ")
    }
    assert sum(v == "warm" for v in outcomes.values()) >= len(tracing)
    # No backend and no thread: a fork would lose the threads of either.
    assert said["backend"] is False
    assert said["threads"][1] == said["threads"][0]
    # A later trace of a warmed example opens only the frames a second trace opens (its own, and
    # those JAX never caches: a custom_jvp's function such as jax.nn.relu, a scan's body): each
    # jnp helper's nested jit is a cache hit. Cold, the helpers' frames open too.
    assert all(first == again for first, again in said["warm"].values()), said["warm"]
    assert said["hot"] < said["cold"]


def test_an_example_that_changes_the_config_or_environment_is_put_back_and_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jax
    from jaxscope.internals.warm_traces import warm_example

    monkeypatch.delenv("JAXSCOPE_WARM_PROBE", raising=False)
    code = (
        "import os, jax\n"
        "import jax.numpy as jnp\n"
        "jax.config.update('jax_enable_x64', not jax.config.values['jax_enable_x64'])\n"
        "os.environ['JAXSCOPE_WARM_PROBE'] = '1'\n"
        "def f(x):\n    return jnp.sin(x)\n"
        "args = (1.0,)\n"
    )
    x64 = jax.config.values["jax_enable_x64"]
    said = warm_example(code, "changes.py")
    assert said == "skipped: it changed the environment, jax_enable_x64"
    assert jax.config.values["jax_enable_x64"] == x64
    assert "JAXSCOPE_WARM_PROBE" not in os.environ
    assert warm_example("def f(x):\n    return x\nargs = (1.0,)\n", "plain.py") == "warm"


# An example that defines a primitive and registers its JVP rule (as transpose's
# no_transpose_rule example does): the rule goes, and the rules exhibit's counts stay a fresh
# process's. One that imports what the template has not is not run at all.
PRIMITIVE = """import jax
from jax.extend.core import Primitive
from jax.interpreters import ad
double_p = Primitive("double_warm_test")
double_p.def_abstract_eval(lambda x: x)
ad.defjvp(double_p, lambda t, x: 2 * t)
def f(x):
    return double_p.bind(x)
args = (1.0,)
"""


def test_an_example_that_registers_rules_or_imports_a_module_leaves_neither() -> None:
    import jax.extend.core  # noqa: F401  (imported, as in a template whose probes import it)
    from jaxscope.internals.rule_tables import table_sizes
    from jaxscope.internals.warm_traces import warm_example

    sizes = table_sizes()
    assert warm_example(PRIMITIVE, "primitive.py") == "skipped: it changed ad.primitive_jvps"
    assert table_sizes() == sizes
    said = warm_example("import jaxscope_no_such_module\n", "imports.py")
    assert said == "skipped: it imports jaxscope_no_such_module"


_SAMPLED = sample(["caches", "recompile_hunt", "jvp"], 1, key="template_warm")

# Fields that are measurements of this run (times, byte counts), not what the run showed.
_MEASURED = ("duration_ms", "seconds", "_ms", "_s", "elapsed", "wall", "cpu")


def _shown(stdout: str) -> list[Any]:
    """The events of ``jaxscope run --json`` without what measures this run (times, in fields or
    in JAX's log text), run ids and object ids."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k != "run_id" and not any(k == m or k.endswith(m) for m in _MEASURED)
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, str):
            # JAX's cache-miss text names the function object by its id(); its compile log
            # says how long each step took
            return re.sub(r"\d+\.\d+ sec\b", "T sec", re.sub(r"\bid=\d+", "id=N", value))
        return value

    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [strip(e) for e in events if e.get("type") != "stage_timed"]


# The exhibits whose runs a warm cache could change if a probe did not empty the caches it reads:
# the tracing exhibit (its jit calls, cache sizes, JAX's cache-miss text), the caches exhibit
# (its trace and compile counts per call), recompile_hunt (its explained misses), jvp (a trace
# of a trace).
# make test: tracing and one other (a fixed, seeded sample); make test-all: all four.
@pytest.mark.parametrize(
    "exhibit",
    [
        pytest.param(e, marks=() if e == "tracing" or e in _SAMPLED else pytest.mark.full)
        for e in ("tracing", "caches", "recompile_hunt", "jvp")
    ],
)
def test_a_fork_of_a_warm_template_shows_what_a_fork_of_a_cold_one_shows(
    exhibit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if (problem := zygote_problem("jax", Limits())) is not None:
        pytest.skip(f"workers are not forked here: {problem}")
    entry = EXHIBITS[exhibit]
    example = str(entry.example_paths()[entry.default_example])
    shown: dict[str, list[Any]] = {}
    for warm in ("1", "0"):
        monkeypatch.setenv(WARM_SWITCH, warm)
        template = forked.template_for(worker_env(kind="jax"))
        if warm == "1":
            idle = template.wait_idle(600)
            assert idle is not None and idle["idle_done"]["warm"] > 0, idle
        done = run_cli("run", exhibit, example, "--json")
        assert done.returncode == 0, done.stderr
        shown[warm] = _shown(done.stdout)
    assert shown["1"] == shown["0"]
    assert len(shown["1"]) > 3


def test_the_first_jaxpr_and_the_start_of_a_run_leave_without_waiting_for_a_frame() -> None:
    """``shown_at_once`` events (``run_started``, ``jaxpr_staged``) are flushed as soon as they
    are sent; a stage's start waits for the frame's window as before."""
    view = JaxprView(
        text="{ lambda ; . let  in () }", constvars=[], invars=[], outvars=[], eqns=[], effects=[]
    )
    script: list[EventModel] = [
        RunStarted(
            exhibit="tracing", jax_version="x", backend="cpu", devices=[], cpu_device_count=1
        ),
        StageStarted(stage="trace"),
        JaxprStaged(fun_name="f", jaxpr=view),
        StageStarted(stage="call", call_index=0),
        RunFinished(duration_ms=1.0),
    ]

    ran = asyncio.Event()

    class Scripted:
        async def run(self, request: RunRequest, emit: Any) -> RunFinished:
            for event in script:
                await emit(event)
            ran.set()
            return cast(RunFinished, script[-1])

        def cancel(self, run_id: str) -> bool:
            return False

        async def close(self) -> None:
            return None

    log: list[str] = []
    requests = [json.dumps({"type": "run", "run_id": "r1", "exhibit": "tracing", "code": ""})]

    async def receive() -> str | None:
        if requests:
            return requests.pop(0)
        await ran.wait()  # the peer goes once the run has ended
        return None

    async def send(text: str) -> None:
        log.append(json.loads(text)["type"])

    async def flush() -> None:
        log.append("flush")

    run_async(serve_requests(receive, send, cast(Session, Scripted()), flush=flush))
    assert log == [
        "run_started",
        "flush",
        "stage_started",
        "jaxpr_staged",
        "flush",
        "stage_started",
        "run_finished",
        "flush",
    ]


def test_the_idle_work_leaves_the_cpu_to_the_first_forks_for_a_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The idle tasks start ``IDLE_AFTER_FORK_S`` after the template's ready and after each fork
    (the children just forked warm up and run first: issue 36's cold start, design 0079): a
    template that nobody asks for a fork ends its idle work (the probes' imports) no sooner."""
    if (problem := zygote_problem("jax", Limits())) is not None:
        pytest.skip(f"workers are not forked here: {problem}")
    monkeypatch.setenv(WARM_SWITCH, "0")
    template = forked.Template(worker_env(kind="jax"))
    ready = time.monotonic()
    try:
        idle = template.wait_idle(120)
        assert idle is not None and idle["idle_done"]["imported"] > 0, idle
        assert time.monotonic() - ready >= zygote.IDLE_AFTER_FORK_S
    finally:
        template.close()


# The JAX template's preload as the template makes it (the collector off), then what a collection
# would find unreachable: the template freezes it with the rest instead (``zygote.main``).
PRELOAD_GARBAGE = """
import gc, json
gc.disable()
from jaxscope.sandbox import zygote
zygote._preload("jax")
tracked = len(gc.get_objects())
gc.set_debug(gc.DEBUG_SAVEALL)
found = gc.collect()
kinds = sorted({type(o).__module__ + "." + type(o).__qualname__ for o in gc.garbage})
print(json.dumps({"tracked": tracked, "found": found, "kinds": kinds}))
"""


def test_what_the_jax_templates_preload_leaves_unreachable_is_little_and_holds_no_resource() -> (
    None
):
    """The JAX template freezes its preload without collecting it first (issue 36's cold start):
    what that keeps alive for good is a few thousand of its objects, none of them a file, a
    socket, a thread or a JAX object with a finalizer."""
    out = fresh_json(PRELOAD_GARBAGE)
    assert out["found"] < 20_000 and out["found"] < out["tracked"] // 20, out["found"]
    resources = ("_io.", "socket.", "threading.", "jaxlib", "jax.", "subprocess.", "mmap.")
    assert not [kind for kind in out["kinds"] if kind.startswith(resources)], out["kinds"]
