"""Benchmark: the CPU seconds one small run costs the machine, all processes included (design 0074).

A busy machine stretches wall-clock figures, not CPU time: this bench starts its own ``jaxscope
serve`` (``local_server.serving``), warms it with a few runs, then sends ``--runs`` small runs on
one websocket, back to back (each waits for the previous one's terminal event), and reads the CPU
seconds (user + system, ``/proc/PID/stat``) of

- ``server``: the server process alone (websocket, validation of every event line, frames);
- ``workers``: every other process under it (the warm template, each worker's helper, init and
  worker, bubblewrap): the worker starts (one per run: each run gets a fresh worker) and the
  runs themselves;

sampled every 10 ms (a worker killed with its init is reaped by no one who counts it), and
prints one JSON object with each per run (``*_cpu_ms_per_run``), the wall seconds per run,
and the load average beside them. ``bench/load.py`` sees the sum as its throughput limit:
2 cores / CPU-s per run = runs per second.

Usage: ``.venv/bin/python bench/run_cpu.py [--runs N] [--snippet load|FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from jaxscope.local_server import serving
from jaxscope.server.frames import frame_objects
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parent.parent
# bench/load.py's snippet.
SNIPPET = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\nargs = (1.0,)\n"
TICK = os.sysconf("SC_CLK_TCK")


def scan() -> dict[int, tuple[int, int, float]]:
    """pid -> (parent pid, start time in ticks, own user + system CPU s) of every process."""
    found: dict[int, tuple[int, int, float]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                text = stat.read()
            fields = text[text.rfind(b")") + 2 :].split()
            cpu = (int(fields[11]) + int(fields[12])) / TICK
            found[int(entry.name)] = (int(fields[1]), int(fields[19]), cpu)
        except (OSError, ValueError, IndexError):
            continue
    return found


class Poller:
    """Samples, every ``PERIOD_S``, the CPU of the server and of every process under it, keeping
    each process's last figure (by pid and start time): a worker is killed with its init, whose
    CPU no parent reaps, so its last sample is what counts (at most one period is missed)."""

    PERIOD_S = 0.01

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.last: dict[tuple[int, int], float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self.stop.wait(self.PERIOD_S):
            procs = scan()
            mine = {self.server_pid}
            grew = True
            while grew:
                grew = False
                for pid, (ppid, _, _) in procs.items():
                    if ppid in mine and pid not in mine:
                        mine.add(pid)
                        grew = True
            for pid in mine:
                if pid in procs:
                    _, started, cpu = procs[pid]
                    self.last[(pid, started)] = cpu

    def totals(self) -> tuple[float, float]:
        """(the server's CPU s, every other process's) as last sampled."""
        server = sum(c for (pid, _), c in self.last.items() if pid == self.server_pid)
        return server, sum(self.last.values()) - server


def one_run(ws: Any, code: str) -> None:
    run_id = uuid.uuid4().hex[:12]
    ws.send(json.dumps({"type": "run", "run_id": run_id, "exhibit": "tracing", "code": code}))
    while True:
        for event in frame_objects(ws.recv()):
            if event.get("run_id") != run_id:
                continue
            if event["type"] == "run_failed":
                raise RuntimeError(f"run failed: {event['kind']}: {event['message']}")
            if event["type"] == "run_finished":
                return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--snippet", default="load", help="'load' (bench/load.py's) or a file")
    ns = parser.parse_args()
    code = SNIPPET if ns.snippet == "load" else Path(ns.snippet).read_text()
    with serving(cwd=ROOT) as server:
        with connect(f"ws://127.0.0.1:{server.port}/api/ws", max_size=2**26) as ws:
            for _ in range(3):
                one_run(ws, code)
            time.sleep(2.0)  # the spare started after the last warm-up run is ready
            poller = Poller(server.proc.pid)
            poller.thread.start()
            time.sleep(0.5)
            load_start = os.getloadavg()
            own0, rest0 = poller.totals()
            # processes alive now count from here: their earlier CPU is not this bench's runs'
            base = dict(poller.last)
            t0 = time.perf_counter()
            for _ in range(ns.runs):
                one_run(ws, code)
            wall = time.perf_counter() - t0
            time.sleep(2.0)  # the last spare's start finishes: one start per run
            poller.stop.set()
            poller.thread.join()
            for key, cpu in base.items():
                poller.last[key] = poller.last[key] - cpu
            own1, rest1 = poller.totals()
            own0 = rest0 = 0.0
    n = ns.runs
    print(
        json.dumps(
            {
                "runs": n,
                "server_cpu_ms_per_run": round((own1 - own0) / n * 1e3, 1),
                "workers_cpu_ms_per_run": round((rest1 - rest0) / n * 1e3, 1),
                "total_cpu_ms_per_run": round((own1 - own0 + rest1 - rest0) / n * 1e3, 1),
                "wall_ms_per_run": round(wall / n * 1e3, 1),
                "loadavg_start": [round(x, 2) for x in load_start],
                "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )


if __name__ == "__main__":
    main()
