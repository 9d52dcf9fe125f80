"""Benchmark: what the autodiff exhibits' capture costs, against ``make_jaxpr(grad(f))``.

The function is an MLP with layer norm and GELU. The issue's example, 4 such layers, is 112
equations in JAX 0.10.2 (``jnp`` helpers no longer leave nested ``jit`` eqns here), so the
benchmark stacks 36 layers: about 1,000 equations (the count is printed). One repeat, on a
freshly loaded snippet (new function objects, so neither side hits JAX's tracing caches):

* **jaxscope**: the capture of the three AD exhibits, as their probes do it, every event sent
  through the worker's own ``RunContext.emit`` (the runner's summarising and serialisation; the
  event pipe replaced by a byte counter) —
  ``jvp``: the primal jaxpr, its ``JaxprStaged`` view, ``capture_jvp`` and its events;
  ``partial_eval``: ``jvp_program``, ``split_program`` and its ``JaxprSplit``; ``transpose``:
  ``linearize_vjp``, ``linear_jaxpr_staged``, ``walk`` and every step's ``TransposeStepped``
  (the remat table, the gradient attempts, the finite differences and the float64 walk are
  checks, not capture, and are not included). Measured twice per repeat: as the **page** runs
  it (``RunRequest.details = "on_demand"``: summaries streamed, value previews printed only when
  the page asks for a step, ``jaxscope.internals.previews``) and **eager** (the CLI, tests:
  every event whole);
* **plain JAX**: ``jax.make_jaxpr(jax.grad(f, argnums=0))(*args)``;
* **the floor**: only the JAX calls the three exhibits cannot do without, with nothing recorded,
  viewed or previewed: ``make_jaxpr(f)``; JAX's JVP jaxpr ``make_jaxpr(jvp(f))``; the values of
  every JVP eqn (eager ``jax.jvp``); ``jvp_program`` and JAX's partial evaluator on it; the
  linearisation and its backward pass on values (``plain_backward_pass``: what ``jax.vjp``'s
  function runs); and JAX's own text (``str``) of each jaxpr the exhibits show (primal, JVP twice:
  two exhibits, known, unknown, linear).

Each repeat times plain JAX, both captures and the floor in turn (the machine is shared, its load
changes within minutes), each call on a collected heap (``gc.collect()`` first: the garbage of one
call is not charged to the next), with the collector set as in a worker after its warm-up
(``gc.freeze()``, ``runner.GC_THRESHOLDS``). Figures are ratios of medians of wall time;
``cpu`` holds the same ratios in this process's CPU time (``time.process_time``), which a
loaded machine disturbs less. ``ratio`` and ``exhibits_ratio`` are the **page's** capture
(``on_demand``: what a user of the page waits for; an exhibit is one run, so each exhibit's share
is what its user waits for); ``eager`` holds the same figures for the CLI's capture. Goals
(issues 3 and 14): each exhibit at most 2x, the three together at most 5x. ``parts_median_ms``
is the median of each part of the page's capture (``eager.parts_median_ms`` the CLI's: where the
time goes; docs/design/0013-ad-capture-speed.md); ``details_median_ms`` what answering every
detail of the page's capture costs afterwards (the worker prints the held previews then);
``streamed_bytes`` what each mode sent; ``floor_ratio`` what the floor alone costs.

``summary_ratio`` is ``exhibits_ratio`` without the verdict (jvp's outputs against ``jax.jvp``:
a page's capture makes it after the steps are streamed, design 0068): what the page first shows.
With ``--probes``, ``probe_runs`` times each exhibit's own probe run in-process through the
runner (its attempts, checks and finite differences included), to its last summary event
(``summary_ratio``) and to its end, the verdict included (``whole_ratio``), in wall and CPU
time, each over ``make_jaxpr(grad(f))`` timed in the same repeats (goals of issue 36: 2x, 4x).
``whole_floor_ratio`` ([wall, CPU] per exhibit) is what the JAX calls behind each whole run's
references cost alone (``whole_floor``): the least its ``whole_ratio`` could be while the run
keeps them.

Usage: ``.venv/bin/python bench/ad_overhead.py [--repeats N] [--json OUT] [--probes]``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import jax
from jaxscope.finite_diff import central_differences
from jaxscope.internals.calling import block_until_ready, concrete_args, plan_call
from jaxscope.internals.jvp_steps import capture_jvp, choose_tangents, closed_function
from jaxscope.internals.remat import remat_table
from jaxscope.internals.split import default_known, jvp_program, split_jaxpr, split_program
from jaxscope.internals.transpose_walk import (
    linearize_vjp,
    plain_backward_pass,
    seed_cotangents,
    walk,
)
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import JaxprStaged, RunRequest
from jaxscope.sandbox import guard, runner
from jaxscope.sandbox.snippet import load_snippet

from exhibits.jvp.probe import staged_event, step_event
from exhibits.partial_eval.events import JaxprSplit
from exhibits.transpose.probe import FD_ELEMENTS, FD_PER_LEAF
from exhibits.transpose.walk_events import linear_staged, stepped

SNIPPET = """
import jax
import jax.numpy as jnp
import numpy as np


def layer_norm(h, g, b):
    mu = jnp.mean(h, axis=-1, keepdims=True)
    var = jnp.mean((h - mu) ** 2, axis=-1, keepdims=True)
    return g * (h - mu) / jnp.sqrt(var + 1e-5) + b


def f(params, x, y):
    h = x
    for p in params:
        h = jax.nn.gelu(layer_norm(h @ p["w"] + p["b"], p["g"], p["beta"]))
    return jnp.mean((h - y) ** 2)


rng = np.random.default_rng(0)
d = 16
params = [
    {
        "w": (rng.standard_normal((d, d)) * 0.3).astype(np.float32),
        "b": np.zeros(d, np.float32),
        "g": np.ones(d, np.float32),
        "beta": np.zeros(d, np.float32),
    }
    for _ in range(36)
]
x = rng.standard_normal((8, d)).astype(np.float32)
y = rng.standard_normal((8, d)).astype(np.float32)
args = (params, x, y)
"""


def count_eqns(jaxpr: Any) -> int:
    """Eqns of ``jaxpr`` plus those of every jaxpr nested in an eqn's params."""
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for sub in _subjaxprs(eqn):
            total += count_eqns(sub)
    return total


def _subjaxprs(eqn: Any) -> list[Any]:
    found = []
    for value in eqn.params.values():
        for v in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(v, "jaxpr", v)
            if hasattr(inner, "eqns"):
                found.append(inner)
    return found


Details = Literal["on_demand", "eager"]
MODES: tuple[Details, ...] = ("on_demand", "eager")


class Sink:
    """The worker's event pipe, counting bytes (``runner._write_event_line``)."""

    def __init__(self) -> None:
        self.bytes = 0

    def __call__(self, line: bytes) -> None:
        self.bytes += len(line)


def _context(details: Details, exhibit: str) -> runner.RunContext:
    return runner.RunContext(RunRequest(run_id="bench", exhibit=exhibit, code="", details=details))


def capture(
    details: Details,
    parts: dict[str, list[float]] | None = None,
    contexts: list[runner.RunContext] | None = None,
) -> None:
    """The three AD exhibits' capture on a fresh snippet, as their probes do it, each event
    emitted through the runner (``details``: the page's ``on_demand`` or the CLI's ``eager``).
    With ``parts``, each part's seconds are appended to ``parts[name]``; with ``contexts``, each
    exhibit's ``RunContext`` (its capture of whole events) is appended."""
    clock = [time.perf_counter(), time.process_time()]

    def lap(name: str) -> None:
        now = [time.perf_counter(), time.process_time()]
        if parts is not None:
            parts.setdefault(name, []).append(now[0] - clock[0])
            parts.setdefault("cpu " + name, []).append(now[1] - clock[1])
        clock[:] = now

    on_demand = details == "on_demand"
    snippet = load_snippet(SNIPPET)
    plan = plan_call(snippet)
    ctx = _context(details, "jvp")
    primal = plan.make_jaxpr()
    lap("jvp: primal make_jaxpr")
    ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(primal)))
    lap("jvp: primal view (emitted)")
    jvp = capture_jvp(plan, primal, previews_on_demand=on_demand)
    lap("jvp: capture_jvp")
    for step in jvp.steps:
        ctx.emit(step_event(step))
    lap("jvp: events emitted")
    # The outputs against jax.jvp: a page's capture makes it now, after the steps (design 0068).
    ctx.emit(staged_event(jvp.staged))
    lap("jvp: verdict (made and emitted)")
    if contexts is not None:
        contexts.append(ctx)

    ctx = _context(details, "partial_eval")
    program = jvp_program(plan)
    lap("partial_eval: jvp_program")
    split, _ = split_program(program, default_known(len(program.labels), program.n_primals))
    event = JaxprSplit.model_validate(split, from_attributes=True)
    lap("partial_eval: split_program")
    ctx.emit(event)
    lap("partial_eval: event emitted")
    if contexts is not None:
        contexts.append(ctx)

    def loss(params: Any) -> Any:
        return snippet.f(params, *snippet.args[1:])

    ctx = _context(details, "transpose")
    lin = linearize_vjp(loss, [snippet.args[0]], previews_on_demand=on_demand)
    lap("transpose: linearize_vjp")
    ctx.emit(linear_staged(lin))
    lap("transpose: linear_jaxpr_staged (emitted)")
    result = walk(lin, seed_cotangents(lin))
    lap("transpose: walk")
    for record in result.steps:  # each TransposeStepped is built on first use, as the probe's
        ctx.emit(stepped(record))
    lap("transpose: step events (built and emitted)")
    if contexts is not None:
        contexts.append(ctx)


# The events that end each exhibit's summary (what the page first shows, design 0068): the last
# of them written is when the page has it; the rest of the run (the values on demand aside) is
# the verdict (jvp's outputs against jax.jvp, transpose's gradient check with its attempts and
# finite differences).
SUMMARY_EVENTS = {
    "jvp": b'"type":"jvp_rule_applied"',
    "partial_eval": b'"type":"jaxpr_split"',
    "transpose": b'"type":"transpose_stepped"',
}


def probe_runs(
    details: Details, sums: dict[str, list[float]], wholes: dict[str, list[float]]
) -> None:
    """Each AD exhibit's own probe run in-process on a fresh snippet through the runner's
    ``RunContext`` (``details``): appends the seconds to its last summary event to ``sums`` and
    to the end of the run (the verdict included) to ``wholes``, by exhibit."""
    for exhibit, marker in SUMMARY_EVENTS.items():
        probe: Any = importlib.import_module(f"exhibits.{exhibit}.probe")
        ctx = _context(details, exhibit)
        ctx.snippet = load_snippet(SNIPPET)
        last = [0.0, 0.0]
        sink = runner._write_event_line

        def write(
            line: bytes,
            marker: bytes = marker,
            sink: Callable[[bytes], None] = sink,
            last: list[float] = last,
        ) -> None:
            sink(line)
            if marker in line:
                last[:] = [time.perf_counter(), time.process_time()]

        runner._write_event_line = write
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            probe.run(ctx)
        finally:
            runner._write_event_line = sink
        end, cend = time.perf_counter(), time.process_time()
        sums.setdefault(exhibit, []).append(last[0] - t0)
        wholes.setdefault(exhibit, []).append(end - t0)
        sums.setdefault("cpu " + exhibit, []).append(last[1] - c0)
        wholes.setdefault("cpu " + exhibit, []).append(cend - c0)


def _run_ratios(
    sums: dict[str, list[float]], wholes: dict[str, list[float]], cpu: dict[str, list[float]]
) -> dict[str, dict[str, float]]:
    """Per exhibit: its summary's and its whole run's median over plain JAX's median, in wall
    time and (``cpu_``) in this process's CPU time, plain JAX timed in the same repeats."""
    base = statistics.median(cpu["run plain wall"])
    base_cpu = statistics.median(cpu["run plain"])
    return {
        exhibit: {
            "summary_ratio": round(statistics.median(sums[exhibit]) / base, 2),
            "whole_ratio": round(statistics.median(wholes[exhibit]) / base, 2),
            "cpu_summary_ratio": round(statistics.median(sums["cpu " + exhibit]) / base_cpu, 2),
            "cpu_whole_ratio": round(statistics.median(wholes["cpu " + exhibit]) / base_cpu, 2),
        }
        for exhibit in SUMMARY_EVENTS
    }


def serve_details(contexts: list[runner.RunContext]) -> None:
    """Answer every detail the page's capture kept (``runner._send_whole``: the held previews
    are printed now): what a page that opened every step would cost the worker afterwards."""
    for ctx in contexts:
        for detail_id, event in ctx.capture.items():
            runner._send_whole(event, detail_id, ctx.run_id)


def floor() -> None:
    """The JAX calls the capture cannot do without (see the module docstring), nothing else."""
    snippet = load_snippet(SNIPPET)
    plan = plan_call(snippet)
    str(plan.make_jaxpr())
    dynamic = concrete_args(plan.dynamic_args())
    tangents = choose_tangents(dynamic, None)
    f_closed = closed_function(plan)
    str(jax.make_jaxpr(lambda p, t: jax.jvp(f_closed, p, t))(dynamic, tangents))
    jax.jvp(f_closed, dynamic, tangents)
    program = jvp_program(plan)
    split = split_jaxpr(program.jaxpr, default_known(len(program.labels), program.n_primals))
    for closed in (program.jaxpr, split.known, split.unknown):
        str(closed)

    def loss(params: Any) -> Any:
        return snippet.f(params, *snippet.args[1:])

    lin = linearize_vjp(loss, [snippet.args[0]])
    str(lin.closed())
    plain_backward_pass(lin, seed_cotangents(lin))


def whole_floor(exhibit: str) -> None:
    """The JAX calls each exhibit's whole run makes for its references, nothing recorded,
    viewed or sent (what ``whole_ratio`` cannot go under while the run keeps them):
    ``transpose``: the linearisation and its backward pass on values (the walk's JAX work), the
    ``jit`` attempt's trace, the eager ``jax.grad``, ``jax.vjp`` with its backward pass, and the
    finite differences of the run's sample (``FD_ELEMENTS``, ``FD_PER_LEAF``) in float64;
    ``partial_eval``: ``jvp_program``, JAX's partial evaluator on it, and the remat table's rows
    (each ``saved_residuals`` of ``jax.checkpoint(f, policy)``: this benchmark's f is past
    ``MAX_COMPILED_EQNS``, so nothing is compiled, as in the run); ``jvp``: the primal jaxpr,
    ``make_jaxpr(jvp(f))``, the eager ``jax.jvp`` (the step values) and ``jax.jvp`` again (the
    verdict's reference)."""
    snippet = load_snippet(SNIPPET)
    plan = plan_call(snippet)
    args = snippet.args
    if exhibit == "transpose":
        lin = linearize_vjp(snippet.f, list(args))
        plain_backward_pass(lin, seed_cotangents(lin))
        argnums = tuple(range(len(args)))
        jax.jit(jax.grad(snippet.f, argnums=argnums)).trace(*args)
        block_until_ready(jax.grad(snippet.f, argnums=argnums)(*args))
        out, f_vjp = jax.vjp(snippet.f, *args)
        block_until_ready(f_vjp(jax.numpy.ones_like(out)))
        central_differences(
            snippet.f, args, list(argnums), max_elements=FD_ELEMENTS, per_leaf=FD_PER_LEAF
        )
    elif exhibit == "partial_eval":
        program = jvp_program(plan)
        split_jaxpr(program.jaxpr, default_known(len(program.labels), program.n_primals))
        list(remat_table(plan, "floor"))
    else:
        plan.make_jaxpr()
        dynamic = concrete_args(plan.dynamic_args())
        tangents = choose_tangents(dynamic, None)
        f_closed = closed_function(plan)
        jax.make_jaxpr(lambda p, t: jax.jvp(f_closed, p, t))(dynamic, tangents)
        block_until_ready(jax.jvp(f_closed, dynamic, tangents))
        block_until_ready(jax.jvp(f_closed, dynamic, tangents))


def plain() -> None:
    """``jax.make_jaxpr(jax.grad(f))`` on a fresh snippet."""
    snippet = load_snippet(SNIPPET)
    jax.make_jaxpr(jax.grad(snippet.f))(*snippet.args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--probes",
        action="store_true",
        help="also time each exhibit's whole probe run: to its summary and to its verdict",
    )
    ns = parser.parse_args()
    # The runner raises the worker's CPU limit as a run grows: not this process's.
    guard.set_cpu_budget = lambda seconds: None
    sink = Sink()
    runner._write_event_line = sink
    snippet = load_snippet(SNIPPET)
    eqns = count_eqns(jax.make_jaxpr(snippet.f)(*snippet.args).jaxpr)
    # Warm every path once (imports, first-use compilation of JAX's own helpers).
    for details in MODES:
        capture(details)
    floor()
    plain()
    if ns.probes:
        for details in MODES:
            probe_runs(details, {}, {})
        for exhibit in SUMMARY_EVENTS:
            whole_floor(exhibit)
    # As a worker after its warm-up (runner.main): what is alive now out of the collector's
    # reach, and its thresholds (runner.GC_THRESHOLDS), for plain JAX and the captures alike.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*runner.GC_THRESHOLDS)
    parts: dict[Details, dict[str, list[float]]] = {d: {} for d in MODES}
    times: dict[Details, list[float]] = {d: [] for d in MODES}
    plain_s: list[float] = []
    floor_s: list[float] = []
    runs_sum: dict[Details, dict[str, list[float]]] = {d: {} for d in MODES}
    runs_whole: dict[Details, dict[str, list[float]]] = {d: {} for d in MODES}
    run_plain_s: list[float] = []
    streamed: dict[Details, int] = {}
    details_s: list[float] = []

    cpu: dict[str, list[float]] = {}
    floors: dict[str, list[float]] = {}

    def timed(fn: Callable[[], None], name: str) -> float:
        # Each call starts on a collected heap: the garbage of the call before is not charged
        # to it (Python's collector takes 20-45% of these calls' CPU time here).
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.setdefault(name, []).append(time.process_time() - c0)
        return time.perf_counter() - t0

    # Every repeat times plain JAX, both captures and the floor in turn, so that all of them
    # see the same machine (it is shared: its load changes within minutes).
    for _ in range(ns.repeats):
        plain_s.append(timed(plain, "plain"))
        for details in MODES:
            contexts: list[runner.RunContext] = []
            before = sink.bytes
            run = functools.partial(capture, details, parts[details], contexts)
            times[details].append(timed(run, details))
            streamed[details] = sink.bytes - before
            if details == "on_demand":
                details_s.append(timed(functools.partial(serve_details, contexts), "details"))
        floor_s.append(timed(floor, "floor"))
        if ns.probes:
            run_plain_s.append(timed(plain, "run plain"))
            cpu.setdefault("run plain wall", []).append(run_plain_s[-1])
            for details in MODES:
                probe_runs(details, runs_sum[details], runs_whole[details])
            for exhibit in SUMMARY_EVENTS:
                floors.setdefault(exhibit, []).append(
                    timed(functools.partial(whole_floor, exhibit), "whole floor " + exhibit)
                )
    theirs = statistics.median(plain_s)
    least = statistics.median(floor_s)
    prefixes = ("jvp", "partial_eval", "transpose")

    plain_cpu = statistics.median(cpu["plain"])

    def figures(details: Details) -> dict[str, Any]:
        ours = statistics.median(times[details])
        ms = {k: statistics.median(v) * 1e3 for k, v in parts[details].items()}
        wall_ms = {k: v for k, v in ms.items() if not k.startswith("cpu ")}

        def exhibits(prefix: str, over_s: float, summary: bool = False) -> dict[str, float]:
            # summary: the parts before the verdict (what the page first shows, design 0068)
            return {
                name: round(
                    sum(
                        v
                        for k, v in ms.items()
                        if k.startswith(prefix + name + ":") and not (summary and "verdict" in k)
                    )
                    / 1e3
                    / over_s,
                    2,
                )
                for name in prefixes
            }

        return {
            "capture_median_ms": round(ours * 1e3, 1),
            "ratio": round(ours / theirs, 2),
            "exhibits_ratio": exhibits("", theirs),
            "summary_ratio": exhibits("", theirs, summary=True),
            "parts_median_ms": {k: round(v, 1) for k, v in wall_ms.items()},
            "cpu": {
                "ratio": round(statistics.median(cpu[details]) / plain_cpu, 2),
                "exhibits_ratio": exhibits("cpu ", plain_cpu),
                "summary_ratio": exhibits("cpu ", plain_cpu, summary=True),
            },
        }

    page, eager = figures("on_demand"), figures("eager")
    result: dict[str, Any] = {
        "eqns": eqns,
        "repeats": ns.repeats,
        "details": "on_demand",
        "capture_median_ms": page["capture_median_ms"],
        "make_jaxpr_grad_median_ms": round(theirs * 1e3, 1),
        "ratio": page["ratio"],
        "goal_ratio": 5.0,
        "exhibits_ratio": page["exhibits_ratio"],
        "summary_ratio": page["summary_ratio"],
        "goal_exhibit_ratio": 2.0,
        "floor_median_ms": round(least * 1e3, 1),
        "floor_ratio": round(least / theirs, 2),
        "parts_median_ms": page["parts_median_ms"],
        "details_median_ms": round(statistics.median(details_s) * 1e3, 1),
        "cpu": {
            **page["cpu"],
            "make_jaxpr_grad_median_ms": round(plain_cpu * 1e3, 1),
            "floor_ratio": round(statistics.median(cpu["floor"]) / plain_cpu, 2),
        },
        "streamed_bytes": streamed,
        "eager": eager,
    }
    if ns.probes:
        # Each figure a ratio of medians to plain JAX timed beside it in the same repeats.
        result["probe_runs"] = {
            "make_jaxpr_grad_median_ms": round(statistics.median(run_plain_s) * 1e3, 1),
            "goal_summary_ratio": 2.0,
            "goal_whole_ratio": 4.0,
            **{
                details: _run_ratios(runs_sum[details], runs_whole[details], cpu)
                for details in MODES
            },
            # What the whole run cannot go under while it keeps its references (wall, CPU).
            "whole_floor_ratio": {
                exhibit: [
                    round(statistics.median(floors[exhibit]) / statistics.median(run_plain_s), 2),
                    round(
                        statistics.median(cpu["whole floor " + exhibit])
                        / statistics.median(cpu["run plain"]),
                        2,
                    ),
                ]
                for exhibit in SUMMARY_EVENTS
            },
        }
    print(json.dumps(result, indent=2))
    if ns.json:
        ns.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
