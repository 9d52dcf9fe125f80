"""Benchmark: what "every run in a fresh worker" costs (issue 12, docs/design/0001-sandbox.md).

Since issue 12 a sandbox worker serves one run and is killed after it; the next run of any
session starts in a fresh worker (own namespaces, nothing an earlier run changed). The price is
a worker start per run, paid in CPU by the warm pool while the user reads the previous result.
Measured in one run on this machine (numbers, not pass/fail):

- ``start_wall_s`` / ``start_cpu_s``: median wall and CPU seconds (the worker's process) of
  starting one worker in its namespaces up to its ready handshake
  (a fork of the warm template, its namespaces, the backend with 8 CPU devices; no warm-up
  compile since design 0074).
- ``run_wall_s``: median time of a small tracing run on a warm worker (what a user waits for
  when a spare is ready), and ``run_cold_wall_s`` when no spare is ready (start + run).
- ``start_vs_run``: ``start_cpu_s / run_wall_s``, the CPU a run now costs the machine beyond
  the run itself, in units of the run.
- ``bare_start_wall_s``: the same worker started without namespaces (``--unsafe-no-sandbox``),
  so that the cost of bubblewrap alone shows.

``--kind torch`` measures torch workers (design 0025) instead: the same figures, for the
``lazy_tensor`` exhibit's default example (``mlp_item``: a small MLP traced lazily, its graph
compiled and run on torch_xla's CPU client) in workers with the torch exhibits' limits; a torch
worker serves one run and retires, so "warm" there means a spare was ready when the run came.
``template_start_wall_s`` / ``template_cpu_s``: the first start's wall seconds, which include
the warm template's start where workers are forked (design 0053), and the template's own CPU
seconds (its imports: paid once per server, not per worker), both absent where nothing is
forked (``JAXSCOPE_ZYGOTE=0``, no root); ``start_cpu_all_s``: the CPU seconds of every process
of a start (bwrap, its init and the worker; or the fork's helper, init and worker, plus the
template's own CPU per fork), the first start (which starts the template) left out.

Usage: ``.venv/bin/python bench/clean_runs.py [--repeats N] [--kind jax|torch]``; prints one
JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import time

from jaxscope.protocol import EventModel, RunFinished, RunRequest, WorkerKind
from jaxscope.sandbox import forked
from jaxscope.sandbox.kinds import exhibit_limits
from jaxscope.sandbox.namespaces import _parent_pids
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import WorkerProcess, process_cpu_s
from jaxscope.settings import Limits

from exhibits.registry import EXHIBITS, EXHIBITS_DIR

SNIPPET = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\nargs = (1.0,)\n"
# The exhibit each kind's runs use.
EXHIBIT: dict[str, str] = {"jax": "tracing", "torch": "lazy_tensor"}


def _snippet(kind: WorkerKind) -> str:
    if kind == "jax":
        return SNIPPET
    exhibit = EXHIBITS[EXHIBIT[kind]]
    return (EXHIBITS_DIR / exhibit.id / "examples" / f"{exhibit.default_example}.py").read_text()


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    parents = _parent_pids()
    found = [pid]
    for parent in found:
        found += [child for child, of in parents.items() if of == parent]
    return found


async def _start(limits: Limits, kind: WorkerKind) -> tuple[float, float, float]:
    """(wall s, CPU s, CPU s of the tree) of starting one worker up to its handshake (then it
    is closed): the CPU of the worker's Python process (``/proc``), and of every process its
    start left running (bwrap, or the fork's helper, and the namespace's init, with it)."""
    t0 = time.perf_counter()
    worker = await WorkerProcess.spawn(limits, kind)
    wall = time.perf_counter() - t0
    cpu = process_cpu_s(worker.worker_pid) or 0.0
    tree = sum(process_cpu_s(pid) or 0.0 for pid in _tree(worker.pid))
    await worker.close()
    return wall, cpu, tree


def _template_cpu_s(kind: WorkerKind) -> float | None:
    """CPU seconds of this process's template of ``kind`` (its Python: bwrap's child)."""
    for pid in forked.template_pids(kind):
        for child, parent in _parent_pids().items():
            if parent == pid:
                return process_cpu_s(child)
    return None


async def _run(session: Session, n: int, kind: WorkerKind) -> float:
    t0 = time.perf_counter()
    events: list[EventModel] = []

    async def emit(event: EventModel) -> None:
        events.append(event)

    request = RunRequest(run_id=f"bench-{n}", exhibit=EXHIBIT[kind], code=_snippet(kind))
    terminal = await session.run(request, emit)
    assert isinstance(terminal, RunFinished), terminal
    return time.perf_counter() - t0


async def main(repeats: int, kind: WorkerKind = "jax") -> dict[str, float]:
    limits = exhibit_limits(EXHIBIT[kind], Limits(wall_s=60.0, cpu_s=60.0), kind)
    starts = [await _start(limits, kind)]
    before = _template_cpu_s(kind)
    starts += [await _start(limits, kind) for _ in range(repeats - 1)]
    after = _template_cpu_s(kind)
    template_cpu = _template_cpu_s(kind)
    bare = [
        await _start(dataclasses.replace(limits, namespaces=False), kind) for _ in range(repeats)
    ]
    # Warm runs: a spare is ready each time (the pool refills while the bench waits).
    pool = WorkerPool(limits, size=1, max_workers=2, kind=kind)
    pool.start()
    session = Session(pool, EXHIBITS)
    warm = []
    for n in range(repeats):
        while pool.state()["idle"] < 1:
            await asyncio.sleep(0.05)
        warm.append(await _run(session, n, kind))
    await session.close()
    await pool.close()
    # Cold runs: no spare, the run waits for a worker start.
    cold_pool = WorkerPool(limits, size=0, max_workers=1, kind=kind)
    cold_session = Session(cold_pool, EXHIBITS)
    cold = [await _run(cold_session, 100 + n, kind) for n in range(repeats)]
    await cold_session.close()
    await cold_pool.close()
    await asyncio.sleep(1.0)  # the sessions reap their last workers in the background
    start_cpu = statistics.median(cpu for _, cpu, _ in starts)
    run_wall = statistics.median(warm)
    figures: dict[str, float] = {
        "repeats": repeats,
        "start_wall_s": round(statistics.median(wall for wall, _, _ in starts), 3),
        "start_cpu_s": round(start_cpu, 3),
        "bare_start_wall_s": round(statistics.median(wall for wall, _, _ in bare), 3),
        "run_wall_s": round(run_wall, 3),
        "run_cold_wall_s": round(statistics.median(cold), 3),
        "start_vs_run": round(start_cpu / run_wall, 2),
    }
    if template_cpu is not None:
        figures["template_start_wall_s"] = round(starts[0][0], 3)
        figures["template_cpu_s"] = round(template_cpu, 3)
    # Every process of a start: the template's own share (its fork of a large address space)
    # added where workers are forked.
    fork_cpu = (after - before) / (repeats - 1) if before and after and repeats > 1 else 0.0
    tree_cpu = statistics.median(tree for _, _, tree in starts[1:] or starts)
    figures["start_cpu_all_s"] = round(tree_cpu + fork_cpu, 3)
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--kind", choices=("jax", "torch"), default="jax")
    ns = parser.parse_args()
    print(json.dumps({"kind": ns.kind, **asyncio.run(main(ns.repeats, ns.kind))}))
