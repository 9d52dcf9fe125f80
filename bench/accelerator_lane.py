"""Measure the accelerator lane (design 0069) on a host with an accelerator: the numbers of the
design note, from one script run. Nothing here needs an accelerator to run (on a CPU host with
``JAXSCOPE_ACCELERATOR=tpu`` the "accelerator" worker simply runs on the CPU), but only an
accelerator's figures are worth writing down.

Scenarios, each through the server's own ``WorkerPool`` and ``Session`` (no namespaces: the
lent TPU host runs under gVisor, ``--unsafe-no-sandbox``):

- ``cold``: a pool with no warm spare (the CLI's): stations' default example, the wall seconds
  from the request to ``run_finished`` (the worker opens the chip inside it);
- ``spare``: a pool that keeps one warm spare: the seconds until the accelerator spare is ready
  (it opened the chip), then the same run; meanwhile a ``device="cpu"`` run, whose JAX worker
  must not touch the chip while the spare holds it;
- ``back_to_back``: two sessions ask at once: per run its wall seconds and the ``run_queued``
  events it got; the seconds until the next spare is ready;
- ``fallback``: sharding and shard_map's default examples (a (2, 4) mesh): ``run_started``'s
  backend, devices and ``device_note``, the terminal event.

Throughout, a sampler counts the processes whose command line says ``--kind accelerator``
(``/proc``, independent of the pool's own books): ``max_holders`` must be 1.

Usage: ``python bench/accelerator_lane.py OUT.json``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from jaxscope.protocol import EventModel, RunFailed, RunFinished, RunQueued, RunRequest, RunStarted
from jaxscope.sandbox import accelerators
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session, reap_all
from jaxscope.settings import Limits

from exhibits.registry import EXHIBITS


def accelerator_workers() -> int:
    """Processes alive now whose command line runs an "accelerator" worker."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--kind" in argv and argv[argv.index(b"--kind") + 1 : argv.index(b"--kind") + 2] == [
            b"accelerator"
        ]:
            count += 1
    return count


class Sampler:
    def __init__(self) -> None:
        self.max_holders = 0
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.max_holders = max(self.max_holders, accelerator_workers())
            self.samples += 1
            await asyncio.sleep(0.1)

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


def code_of(exhibit: str) -> str:
    spec = EXHIBITS[exhibit]
    return spec.picker_paths()[spec.default_example].read_text()


async def one_run(
    session: Session, exhibit: str, device: str | None = None, n: int = 0
) -> dict[str, Any]:
    events: list[EventModel] = []

    async def emit(event: EventModel) -> None:
        events.append(event)

    request = RunRequest(
        run_id=f"{exhibit}-{n}",
        exhibit=exhibit,
        code=code_of(exhibit),
        device=device,  # type: ignore[arg-type]
    )
    t0 = time.monotonic()
    terminal = await session.run(request, emit)
    wall = time.monotonic() - t0
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    return {
        "exhibit": exhibit,
        "device": device,
        "wall_s": round(wall, 2),
        "terminal": terminal.type,
        "message": terminal.message[:200] if isinstance(terminal, RunFailed) else "",
        "duration_ms": terminal.duration_ms if isinstance(terminal, RunFinished) else None,
        "backend": started.backend if started else None,
        "devices": started.devices if started else None,
        "device_note": started.device_note if started else None,
        "queued": [
            {"reason": e.reason, "position": e.position, "estimate_s": e.estimate_s}
            for e in events
            if isinstance(e, RunQueued)
        ],
        "events": len(events),
    }


async def spare_ready(pool: WorkerPool) -> float:
    t0 = time.monotonic()
    while pool.state()["idle"] < 1:
        await asyncio.sleep(0.05)
    return round(time.monotonic() - t0, 2)


async def main(out: Path) -> None:
    limits = dataclasses.replace(Limits(), namespaces=False, address_space_bytes=0)
    result: dict[str, Any] = {"attached": accelerators.attached()}
    sampler = Sampler()
    sampler.start()

    cold = WorkerPool(limits, size=0)
    session = Session(cold, EXHIBITS)
    result["cold"] = await one_run(session, "stations")
    await session.close()
    await cold.close()

    pool = WorkerPool(limits, size=1)
    pool.start()
    acc = pool.for_exhibit("stations")
    result["accelerator_pool"] = {"kind": acc.kind, "max_workers": acc.max_workers}
    cpu_session = Session(pool, EXHIBITS)
    spare_s, cpu_run = await asyncio.gather(
        spare_ready(acc), one_run(cpu_session, "stations", "cpu")
    )
    result["spare"] = {"ready_s": spare_s, "cpu_run_beside_it": cpu_run}
    session = Session(pool, EXHIBITS, report_starts=True)
    result["spare"]["run"] = await one_run(session, "stations", n=1)

    await spare_ready(acc)
    a, b = Session(pool, EXHIBITS, report_starts=True), Session(pool, EXHIBITS, report_starts=True)
    t0 = time.monotonic()
    runs = await asyncio.gather(one_run(a, "stations", n=2), one_run(b, "jvp", n=3))
    result["back_to_back"] = {"runs": runs, "both_done_s": round(time.monotonic() - t0, 2)}
    result["back_to_back"]["next_spare_s"] = await spare_ready(acc)

    result["fallback"] = [await one_run(session, ex, n=4) for ex in ("sharding", "shard_map")]
    for s in (session, cpu_session, a, b):
        await s.close()
    await pool.close()
    await reap_all()
    sampler.stop()
    result["max_holders"] = sampler.max_holders
    result["samples"] = sampler.samples
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(main(Path(sys.argv[1])))
