"""Benchmark: the transpose exhibit's capture on the 12-layer GPT stack, against ``jax.vjp``.

Issue 14: "the transpose exhibit on the 12-layer transformer finishes, and its gradient is
bit-identical to ``jax.grad``; its capture time ≤ 3× ``jax.vjp`` of the same function".

The program is ``examples/real/gpt_stack.py`` (12 layers, d=256, a loss), differentiated in its
``params`` as the exhibit does by default. One repeat, on a freshly loaded snippet each side
(new function objects: neither hits JAX's tracing caches of the other):

* **the capture**, as ``exhibits/transpose/probe.py`` does it for the page
  (``previews_on_demand``): ``linearize_vjp``, ``linear_jaxpr_staged`` emitted, the walk of the
  backward pass one linear eqn at a time, and every step's ``TransposeStepped`` emitted, each
  event through the worker's own ``RunContext.emit`` (summaries and serialisation; the pipe
  replaced by a byte counter). The exhibit's checks (``jax.grad`` jitted and eager, finite
  differences, the float64 walk) are not capture and are not timed;
* **jax.vjp**: ``out, pullback = jax.vjp(loss, params)``, then ``pullback(1.0)``, blocked on.

``bit_identical`` says whether the walk's cotangents equal ``jax.grad``'s leaf for leaf, bit for
bit (on the last repeat). As ``bench/ad_overhead.py``: each call on a collected heap, the
collector set as in a worker after its warm-up; ``ratio`` is the ratio of medians of wall time,
``cpu_ratio`` the same in this process's CPU time. Prints one JSON object.

Usage: ``.venv/bin/python bench/transpose_vs_vjp.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jaxscope.internals.transpose_walk import (
    linearize_vjp,
    seed_cotangents,
    walk,
)
from jaxscope.protocol import RunRequest
from jaxscope.sandbox import guard, runner
from jaxscope.sandbox.snippet import load_snippet

from exhibits.transpose.walk_events import linear_staged, stepped

PROGRAM = Path(__file__).resolve().parent.parent / "examples" / "real" / "gpt_stack.py"


class Sink:
    """The worker's event pipe, counting bytes (``runner._write_event_line``)."""

    def __init__(self) -> None:
        self.bytes = 0

    def __call__(self, line: bytes) -> None:
        self.bytes += len(line)


def _loss() -> tuple[Callable[[Any], Any], Any]:
    """``f`` as a function of ``params`` alone (the other arguments closed over), and params."""
    snippet = load_snippet(PROGRAM.read_text())
    rest = snippet.args[1:]

    def loss(params: Any) -> Any:
        return snippet.f(params, *rest)

    return loss, snippet.args[0]


def capture(out: dict[str, Any]) -> None:
    """The exhibit's capture for the page (see the module docstring)."""
    loss, params = _loss()
    ctx = runner.RunContext(
        RunRequest(run_id="bench", exhibit="transpose", code="", details="on_demand")
    )
    lin = linearize_vjp(loss, [params], previews_on_demand=True)
    ctx.emit(linear_staged(lin))
    result = walk(lin, seed_cotangents(lin))
    for record in result.steps:
        ctx.emit(stepped(record))
    out["cotangents"] = result.cotangents
    out["steps"] = len(result.steps)
    out["linear_eqns"] = len(lin.jaxpr.eqns)


def vjp(out: dict[str, Any]) -> None:
    """``jax.vjp`` and its pullback on the seed 1.0, blocked on."""
    loss, params = _loss()
    value, pullback = jax.vjp(loss, params)
    (grads,) = pullback(jax.numpy.ones_like(value))
    out["cotangents"] = [leaf.block_until_ready() for leaf in jax.tree_util.tree_leaves(grads)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    ns = parser.parse_args()
    guard.set_cpu_budget = lambda seconds: None  # the runner's CPU limit: not this process's
    sink = Sink()
    runner._write_event_line = sink
    warm: dict[str, Any] = {}
    capture(warm)
    vjp(warm)
    gc.collect()
    gc.freeze()
    gc.set_threshold(*runner.GC_THRESHOLDS)
    wall: dict[str, list[float]] = {"capture": [], "vjp": []}
    cpu: dict[str, list[float]] = {"capture": [], "vjp": []}
    last: dict[str, dict[str, Any]] = {}
    for _ in range(ns.repeats):
        for name, fn in (("vjp", vjp), ("capture", capture)):
            got: dict[str, Any] = {}
            gc.collect()
            t0, c0 = time.perf_counter(), time.process_time()
            fn(got)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            last[name] = got
    loss, params = _loss()
    truth = jax.tree_util.tree_leaves(jax.grad(loss)(params))
    walked = last["capture"]["cotangents"]
    identical = len(walked) == len(truth) and all(
        np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(np.asarray(a), np.asarray(b))
        for a, b in zip(walked, truth, strict=True)
    )

    def median(xs: list[float]) -> float:
        return statistics.median(xs)

    print(
        json.dumps(
            {
                "program": "examples/real/gpt_stack.py",
                "repeats": ns.repeats,
                "linear_eqns": last["capture"]["linear_eqns"],
                "steps": last["capture"]["steps"],
                "capture_median_s": round(median(wall["capture"]), 3),
                "vjp_median_s": round(median(wall["vjp"]), 3),
                "ratio": round(median(wall["capture"]) / median(wall["vjp"]), 2),
                "cpu_ratio": round(median(cpu["capture"]) / median(cpu["vjp"]), 2),
                "streamed_bytes_per_capture": sink.bytes // (ns.repeats + 1),
                "bit_identical": identical,
                "goal": "ratio <= 3 (issue 14)",
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
