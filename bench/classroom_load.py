"""Benchmark: what classroom mode's relay costs the server per student (issue 32, design 0065).

Starts its own ``jaxscope serve`` on loopback, opens a room from a teacher's websocket, joins
``--students`` student websockets (each reads every frame it is sent, and looks for the run's
end), and has the teacher run ``--program`` (default ``examples/real/loop_20k.py`` on
``tracing``: 20,001 eqns) once with no student and once with all of them. For each it records
the teacher's wall time from its run request to its terminal event, the server process's CPU
seconds over that time (``/proc/PID/stat``: the server alone, not its workers), and how many
students got the run's end. Prints one JSON object, with ``cpu_s_per_student`` = (CPU with the
students - CPU without) / students and ``slowdown`` = teacher time with / without.

Numbers, not pass/fail; not part of ``make bench``. The students run in this process, on the same
two cores as the server: on this machine a student's own reading competes with the server.

Usage::

    .venv/bin/python bench/classroom_load.py [--students 50] [--program PATH] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from jaxscope.local_server import serving
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin

ROOT = Path(__file__).resolve().parent.parent
TICKS = os.sysconf("SC_CLK_TCK")
RUN_TIMEOUT_S = 600.0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def next_json(ws: ClientConnection) -> list[dict[str, Any]]:
    frame = await ws.recv()
    value = json.loads(frame)
    return value if isinstance(value, list) else [value]


async def until(ws: ClientConnection, kind: str) -> dict[str, Any]:
    while True:
        for event in await next_json(ws):
            if event.get("type") == kind:
                return event


async def student(url: str, origin: str, room: str, ready: asyncio.Event, ended: list[str]) -> None:
    async with connect(url, origin=Origin(origin), max_size=2**26) as ws:
        await ws.send(json.dumps({"type": "join_room", "room": room}))
        await until(ws, "room_updated")
        ready.set()
        while True:
            frame = await ws.recv()
            # The page parses every frame; a student here only looks for the run's end.
            if '"run_finished"' in frame or '"run_failed"' in frame:
                ended.append("end")
                return


async def one_run(url: str, origin: str, pid: int, code: str, students: int) -> dict[str, Any]:
    async with connect(url, origin=Origin(origin), max_size=2**26) as teacher:
        await teacher.send(json.dumps({"type": "open_room"}))
        room = (await until(teacher, "room_opened"))["room"]
        ended: list[str] = []
        readies = [asyncio.Event() for _ in range(students)]
        tasks = [asyncio.create_task(student(url, origin, room, ready, ended)) for ready in readies]
        for ready in readies:
            await asyncio.wait_for(ready.wait(), 60)
        await asyncio.sleep(1.0)  # the joins' updates settle
        cpu0, t0 = cpu_s(pid), time.perf_counter()
        run = {"type": "run", "run_id": f"bench-{students}", "exhibit": "tracing", "code": code}
        await teacher.send(json.dumps(run | {"details": "on_demand"}))
        terminal = await asyncio.wait_for(until_end(teacher), RUN_TIMEOUT_S)
        teacher_s = time.perf_counter() - t0
        if tasks:
            await asyncio.wait(tasks, timeout=RUN_TIMEOUT_S)
        server_cpu = cpu_s(pid) - cpu0
        for task in tasks:
            task.cancel()
        return {
            "students": students,
            "teacher_s": round(teacher_s, 2),
            "server_cpu_s": round(server_cpu, 2),
            "students_ended": len(ended),
            "terminal": terminal,
        }


async def until_end(ws: ClientConnection) -> str:
    while True:
        for event in await next_json(ws):
            if event.get("type") in ("run_finished", "run_failed"):
                return str(event["type"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--program", type=Path, default=ROOT / "examples/real/loop_20k.py")
    parser.add_argument("--json", type=Path, default=None)
    ns = parser.parse_args()
    if not 1 <= ns.students <= 1000:
        parser.error("--students: 1 to 1000")
    code = ns.program.read_text()
    with serving("--workers", "1", cwd=ROOT) as served:
        url = served.url.replace("http://", "ws://") + "/api/ws"
        origin = served.url

        async def both() -> list[dict[str, Any]]:
            await one_run(url, origin, served.proc.pid, code, 0)  # warm-up (worker start)
            alone = await one_run(url, origin, served.proc.pid, code, 0)
            crowd = await one_run(url, origin, served.proc.pid, code, ns.students)
            return [alone, crowd]

        alone, crowd = asyncio.run(both())
    result = {
        "program": str(ns.program.relative_to(ROOT)) if ns.program.is_relative_to(ROOT) else "",
        "alone": alone,
        "with_students": crowd,
        "slowdown": round(crowd["teacher_s"] / alone["teacher_s"], 2),
        "cpu_s_per_student": round(
            (crowd["server_cpu_s"] - alone["server_cpu_s"]) / ns.students, 4
        ),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if ns.json is not None:
        ns.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
