"""Benchmark: what classroom mode's relay costs the server per student (designs 0065, 0072).

Starts its own ``jaxscope serve`` on loopback, opens a room from a teacher's websocket, joins
``--students`` student websockets (each reads every frame it is sent, as bytes, and looks for the
run's end), and has the teacher run ``--program`` (default ``examples/real/loop_20k.py`` on
``tracing``: 20,001 eqns) once with no student and once with all of them. For each it records
the teacher's wall time from its run request to its terminal event, the server process's CPU
seconds over that time (``/proc/PID/stat``: the server alone, not its workers), the students'
own CPU seconds, and how many students got the run's end. Prints one JSON object, with
``cpu_s_per_student`` = (server CPU with the students - without) / students and ``slowdown`` =
teacher time with / without.

The students run in a process of their own (the teacher's socket stays in this one), at
``--students-nice`` (default 0): on this 2-core machine the students' reading of every frame
(300 x the run's bytes) competes with the server and the teacher's worker, which students on
their own machines would not; a nice of 19 stands in for that (they read when the cores are
free, and a student that falls 16 MiB behind is dropped, which ``students_ended`` would show).

``--queue redis://…``: the server is a web replica on the run queue (design 0072): the teacher's
run goes to a pool host, and the students follow it through the room's Redis log and the run's
stream.

Numbers, not pass/fail; not part of ``make bench``.

Usage::

    .venv/bin/python bench/classroom_load.py [--students 50] [--students-nice 19]
        [--program PATH] [--queue redis://127.0.0.1:6379/0] [--json OUT]
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
from websockets.exceptions import ConnectionClosed
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
    """One student: joins, then reads every frame until the run's end (``end``), the room
    dropping it (``dropped``: it fell 16 MiB behind) or its connection closing (``lost``). No
    keepalive pings of its own: a starved bench process is not a page that went away."""
    async with connect(url, origin=Origin(origin), max_size=2**26, ping_interval=None) as ws:
        await ws.send(json.dumps({"type": "join_room", "room": room}))
        await until(ws, "room_updated")
        ready.set()
        try:
            while True:
                frame = await ws.recv(decode=False)
                # The page parses every frame; a student here only looks for how it ends.
                if b'"run_finished"' in frame or b'"run_failed"' in frame:
                    ended.append("end")
                    return
                if b'"room_closed"' in frame:
                    ended.append("dropped")
                    return
        except ConnectionClosed:
            ended.append("lost")


async def swarm(url: str, origin: str, room: str, students: int) -> None:
    """The students' process: join, say ``ready``, wait for every end (or the time limit),
    then print how many got it and this process's CPU seconds."""
    ended: list[str] = []
    readies = [asyncio.Event() for _ in range(students)]
    tasks = [asyncio.create_task(student(url, origin, room, ready, ended)) for ready in readies]
    for ready in readies:
        await asyncio.wait_for(ready.wait(), 120)
    print("ready", flush=True)
    await asyncio.wait(tasks, timeout=RUN_TIMEOUT_S)
    counts = {why: ended.count(why) for why in ("end", "dropped", "lost")}
    print(json.dumps(counts | {"cpu_s": round(time.process_time(), 2)}), flush=True)


async def one_run(
    url: str, origin: str, pid: int, code: str, students: int, nice: int
) -> dict[str, Any]:
    async with connect(url, origin=Origin(origin), max_size=2**26) as teacher:
        await teacher.send(json.dumps({"type": "open_room"}))
        room = (await until(teacher, "room_opened"))["room"]
        proc = None
        if students:
            proc = await asyncio.create_subprocess_exec(
                "nice", "-n", str(nice), sys.executable, __file__,
                "--swarm", url, origin, room, str(students),
                stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 180)
            assert line.strip() == b"ready", line
        await asyncio.sleep(1.0)  # the joins' updates settle
        cpu0, t0 = cpu_s(pid), time.perf_counter()
        run = {"type": "run", "run_id": f"bench-{students}", "exhibit": "tracing", "code": code}
        await teacher.send(json.dumps(run | {"details": "on_demand"}))
        terminal = await asyncio.wait_for(until_end(teacher), RUN_TIMEOUT_S)
        teacher_s = time.perf_counter() - t0
        swarm_result: dict[str, Any] = {}
        if proc is not None:
            assert proc.stdout is not None
            swarm_result = json.loads(await proc.stdout.readline() or b"{}")
            await proc.wait()
        server_cpu = cpu_s(pid) - cpu0
        return {
            "students": students,
            "teacher_s": round(teacher_s, 2),
            "server_cpu_s": round(server_cpu, 2),
            "students_ended": swarm_result.get("end", 0),
            "students_dropped": swarm_result.get("dropped", 0),
            "students_lost": swarm_result.get("lost", 0),
            "students_cpu_s": swarm_result.get("cpu_s", 0.0),
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
    parser.add_argument(
        "--queue",
        default=None,
        help="redis://HOST:PORT/DB: the server is a web replica on this run queue (start "
        "redis-server and a `jaxscope pool --queue` host first; JAXSCOPE_QUEUE_PASSWORD as they)",
    )
    parser.add_argument("--students-nice", type=int, default=0, choices=range(20))
    parser.add_argument("--swarm", nargs=4, help=argparse.SUPPRESS)  # the students' process
    ns = parser.parse_args()
    if ns.swarm is not None:
        url, origin, room, students = ns.swarm
        asyncio.run(swarm(url, origin, room, int(students)))
        return 0
    if not 1 <= ns.students <= 1000:
        parser.error("--students: 1 to 1000")
    code = ns.program.read_text()
    args = ("--queue", ns.queue) if ns.queue else ("--workers", "1")
    with serving(*args, cwd=ROOT) as served:
        url = served.url.replace("http://", "ws://") + "/api/ws"
        origin = served.url

        async def both() -> list[dict[str, Any]]:
            pid, nice = served.proc.pid, ns.students_nice
            await one_run(url, origin, pid, code, 0, nice)  # warm-up (worker start)
            alone = await one_run(url, origin, pid, code, 0, nice)
            crowd = await one_run(url, origin, pid, code, ns.students, nice)
            return [alone, crowd]

        alone, crowd = asyncio.run(both())
    result = {
        "program": str(ns.program.relative_to(ROOT)) if ns.program.is_relative_to(ROOT) else "",
        "queue": ns.queue is not None,
        "students_nice": ns.students_nice,
        "load_average": os.getloadavg()[0],
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
