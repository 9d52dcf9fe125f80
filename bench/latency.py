"""Benchmark: how much time jaxscope adds to tracing, and how fast a cold server answers.

Two figures, both measured in one run on this machine (numbers, not pass/fail):

1. **Warm overhead.** For each shipped example (``exhibits/tracing/examples/*.py``): the time
   from sending a ``RunRequest`` on the websocket to receiving its ``jaxpr_staged`` event, against
   ``jax.make_jaxpr`` of the same snippet in this process (a fresh function object each time, so
   neither side hits JAX's trace cache). The added overhead is the difference of the medians.
   Goal: at most 15 ms at the median on a warm pool: measured ``--settle`` seconds (default 10)
   after the cold start, once the JAX template has traced the shipped examples between requests
   (design 0076; ``JAXSCOPE_TEMPLATE_WARM=0`` measures without that).
2. **Cold start.** Start ``jaxscope serve``, and measure the time from process start to the first
   ``jaxpr_staged`` of a tiny snippet. Goal: within 3 s.

Usage: ``.venv/bin/python bench/latency.py [--repeats N] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import jax
from jaxscope.local_server import serving
from jaxscope.server.frames import frame_objects
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "exhibits" / "tracing" / "examples").glob("*.py"))
TINY = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) * 2\n\nargs = (jnp.ones(3),)\n"


def time_to_jaxpr(ws: Any, code: str) -> float:
    """Seconds from sending the run request to receiving ``jaxpr_staged`` (then drains the run)."""
    run_id = uuid.uuid4().hex[:12]
    request = {"type": "run", "run_id": run_id, "exhibit": "tracing", "code": code}
    t0 = time.perf_counter()
    ws.send(json.dumps(request))
    staged = None
    ended = False
    while not ended:
        for event in frame_objects(ws.recv()):  # one event, or an array of them
            if event.get("run_id") != run_id:
                continue
            if event["type"] == "jaxpr_staged" and staged is None:
                staged = time.perf_counter() - t0
            if event["type"] in ("run_finished", "run_failed"):
                if event["type"] == "run_failed":
                    raise RuntimeError(f"run failed: {event['kind']}: {event['message']}")
                ended = True
    if staged is None:
        raise RuntimeError("no jaxpr_staged event")
    return staged


def in_process_make_jaxpr(code: str) -> float:
    """Seconds for ``jax.make_jaxpr`` of the snippet's ``f`` (fresh function object)."""
    namespace: dict[str, Any] = {"__name__": "bench_snippet"}
    exec(compile(code, "<bench>", "exec"), namespace)
    f, args = namespace["f"], namespace["args"]
    static = namespace.get("static_argnums", ())
    t0 = time.perf_counter()
    jax.make_jaxpr(f, static_argnums=static)(*args)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument(
        "--settle",
        type=float,
        default=10.0,
        help="seconds to wait after the cold start (the template's idle work, design 0076)",
    )
    parser.add_argument("--json", type=Path, default=None)
    ns = parser.parse_args()

    with serving(cwd=ROOT) as server:
        with connect(f"ws://127.0.0.1:{server.port}/api/ws", max_size=2**26) as ws:
            time_to_jaxpr(ws, TINY)
            cold_s = time.perf_counter() - server.started  # process start -> first jaxpr
            results: dict[str, Any] = {"cold_start_to_first_jaxpr_s": round(cold_s, 3)}
            time.sleep(ns.settle)
            rows: list[dict[str, Any]] = []
            for path in EXAMPLES:
                code = path.read_text()
                time_to_jaxpr(ws, code)  # warm the worker's imports for this example
                ws_times = [time_to_jaxpr(ws, code) for _ in range(ns.repeats)]
                jax_times = [in_process_make_jaxpr(code) for _ in range(ns.repeats)]
                ws_med = statistics.median(ws_times) * 1e3
                jax_med = statistics.median(jax_times) * 1e3
                rows.append(
                    {
                        "example": path.stem,
                        "jaxscope_ms_median": round(ws_med, 2),
                        "make_jaxpr_ms_median": round(jax_med, 2),
                        "overhead_ms_median": round(ws_med - jax_med, 2),
                        "ratio": round(ws_med / jax_med, 2),
                    }
                )
            results["examples"] = rows
            results["overhead_ms_median_over_examples"] = round(
                statistics.median(r["overhead_ms_median"] for r in rows), 2
            )

    print(
        f"cold start -> first jaxpr: {results['cold_start_to_first_jaxpr_s']:.3f} s (goal <= 3 s)"
    )
    print(f"{'example':<14} {'jaxscope':>10} {'make_jaxpr':>11} {'overhead':>9} {'ratio':>6}")
    for r in results["examples"]:
        ours, theirs = r["jaxscope_ms_median"], r["make_jaxpr_ms_median"]
        print(
            f"{r['example']:<14} {ours:>8.2f}ms {theirs:>9.2f}ms"
            f" {r['overhead_ms_median']:>7.2f}ms {r['ratio']:>6.2f}"
        )
    overhead = results["overhead_ms_median_over_examples"]
    print(f"median added overhead: {overhead:.2f} ms (goal <= 15 ms)")
    if ns.json:
        ns.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
