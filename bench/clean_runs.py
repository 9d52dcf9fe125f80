"""Benchmark: what "every run in a fresh worker" costs (issue 12, docs/design/0001-sandbox.md).

Since issue 12 a sandbox worker serves one run and is killed after it; the next run of any
session starts in a fresh worker (own namespaces, nothing an earlier run changed). The price is
a worker start per run, paid in CPU by the warm pool while the user reads the previous result.
Measured in one run on this machine (numbers, not pass/fail):

- ``start_wall_s`` / ``start_cpu_s``: median wall and CPU seconds (the worker's process) of
  starting one worker in its namespaces up to its ready handshake
  (import JAX, 8 CPU devices, a warm jit, the probes).
- ``run_wall_s``: median time of a small tracing run on a warm worker (what a user waits for
  when a spare is ready), and ``run_cold_wall_s`` when no spare is ready (start + run).
- ``start_vs_run``: ``start_cpu_s / run_wall_s``, the CPU a run now costs the machine beyond
  the run itself, in units of the run.
- ``bare_start_wall_s``: the same worker started without namespaces (``--unsafe-no-sandbox``),
  so that the cost of bubblewrap alone shows.

Usage: ``.venv/bin/python bench/clean_runs.py [--repeats N]``; prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import time

from jaxscope.protocol import EventModel, RunFinished, RunRequest
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import WorkerProcess, process_cpu_s
from jaxscope.settings import Limits

from exhibits.registry import EXHIBITS

SNIPPET = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\nargs = (1.0,)\n"


async def _start(limits: Limits) -> tuple[float, float]:
    """(wall s, CPU s) of starting one worker up to its handshake (then it is closed); the CPU
    is the worker's Python process's own (``/proc``), bwrap's is negligible."""
    t0 = time.perf_counter()
    worker = await WorkerProcess.spawn(limits)
    wall = time.perf_counter() - t0
    cpu = process_cpu_s(worker.worker_pid) or 0.0
    await worker.close()
    return wall, cpu


async def _run(session: Session, n: int) -> float:
    t0 = time.perf_counter()
    events: list[EventModel] = []

    async def emit(event: EventModel) -> None:
        events.append(event)

    request = RunRequest(run_id=f"bench-{n}", exhibit="tracing", code=SNIPPET)
    terminal = await session.run(request, emit)
    assert isinstance(terminal, RunFinished), terminal
    return time.perf_counter() - t0


async def main(repeats: int) -> dict[str, float]:
    limits = Limits(wall_s=60.0, cpu_s=60.0)
    starts = [await _start(limits) for _ in range(repeats)]
    bare = [await _start(dataclasses.replace(limits, namespaces=False)) for _ in range(repeats)]
    # Warm runs: a spare is ready each time (the pool refills while the bench waits).
    pool = WorkerPool(limits, size=1, max_workers=2)
    pool.start()
    session = Session(pool, EXHIBITS)
    warm = []
    for n in range(repeats):
        while pool.state()["idle"] < 1:
            await asyncio.sleep(0.05)
        warm.append(await _run(session, n))
    await session.close()
    await pool.close()
    # Cold runs: no spare, the run waits for a worker start.
    cold_pool = WorkerPool(limits, size=0, max_workers=1)
    cold_session = Session(cold_pool, EXHIBITS)
    cold = [await _run(cold_session, 100 + n) for n in range(repeats)]
    await cold_session.close()
    await cold_pool.close()
    await asyncio.sleep(1.0)  # the sessions reap their last workers in the background
    start_cpu = statistics.median(cpu for _, cpu in starts)
    run_wall = statistics.median(warm)
    return {
        "repeats": repeats,
        "start_wall_s": round(statistics.median(wall for wall, _ in starts), 3),
        "start_cpu_s": round(start_cpu, 3),
        "bare_start_wall_s": round(statistics.median(wall for wall, _ in bare), 3),
        "run_wall_s": round(run_wall, 3),
        "run_cold_wall_s": round(statistics.median(cold), 3),
        "start_vs_run": round(start_cpu / run_wall, 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    print(json.dumps(asyncio.run(main(parser.parse_args().repeats))))
