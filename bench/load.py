"""Benchmark: many concurrent sessions against one ``jaxscope serve`` (the sandbox's run queue).

The bench starts its own ``jaxscope serve`` on loopback (``.venv/bin/jaxscope serve --host
127.0.0.1 --port P``), warms it with one run, then opens ``--sessions`` websockets at once (each
with the ``Origin`` of the served page, as a browser sends it) and has each one run a small
snippet on the ``tracing`` exhibit back to back for ``--minutes`` minutes. No session starts a
run after that; runs in flight are waited for (at most :data:`RUN_TIMEOUT_S` each, then
cancelled), and the whole bench stops by itself within ``minutes`` + :data:`GRACE_S` seconds.
Numbers, not pass/fail; the server and its workers are killed at the end, whatever happened.

It prints one JSON object:

- ``sessions``, ``runs`` (runs that ended, or were lost with their connection);
- ``errors``: runs ending in ``run_failed`` of any kind but ``cancelled``, runs lost with a
  dropped connection, and runs the bench itself gave up on (no terminal event within
  :data:`RUN_TIMEOUT_S`); ``error_kinds`` breaks them down, ``error_messages`` gives the
  five commonest messages of the failed runs;
- ``refused`` (a subset of ``errors``): runs failed with a message saying the workers are busy,
  or with kind ``timeout`` before the run got a worker (no event of it but ``run_queued``);
- ``p50_s``, ``p95_s``: seconds from sending the run request to its terminal event (nearest
  rank, over every run that got one);
- ``server_rss_mb_start``/``server_rss_mb_end``: VmRSS of the server process alone (not its
  workers), after the warm-up and at the end (null if the server had exited);
- ``queued_runs`` (runs that got at least one ``run_queued``; ``queued_client_share``: of them,
  those told ``client_share``), ``max_queue_position``;
- ``max_workers``/``per_client``: the pool the server ran with (from ``/api/health``).

Every session comes from 127.0.0.1, i.e. one client address to the server's fair share
(``JAXSCOPE_MAX_WORKERS_PER_CLIENT``, half the pool by default). To model distinct users the
bench lifts that cap (``--per-client`` defaults to the whole pool); ``--per-client 0`` keeps the
server's default, and the sessions then act as one user's tabs.

``--queue`` runs the same load against the run queue instead (design 0065, 0071): the bench
starts a ``redis-server`` on a free loopback port (a random password, no persistence), one
``jaxscope serve --queue`` (the web tier, which runs no user code) and ``--hosts`` (2) ``jaxscope
pool --queue --lanes LANES`` processes on this machine, each waiting for its hosts' heartbeats.
Each session then comes with an ``X-Forwarded-For`` of its own (the web tier trusts 127.0.0.1's,
``--forwarded-allow-ips``), so every session is a distinct client to the queue's share (2 runs
running per client across hosts, 20 queued): a class of students, not one user's tabs.
``run_accepted`` (the queue's answer) counts as neither a start nor a queue place; ``hosts``
and ``lanes`` are added to the JSON, and ``pool`` is the live hosts from ``/api/health``. The
JSON also carries ``loadavg_start``/``loadavg_end`` (``os.getloadavg()``: the machine's load,
which the bench's own processes are part of), and in either mode ``web_cpu_s`` (the server
process alone), ``workers_cpu_s`` (the processes that run user code: the pool hosts' trees, or
the server's tree less itself; ``/proc`` CPU times with the children each reaped) and
``cpu_s_per_run``: what the runs cost in CPU, whatever else the machine ran. ``--logs DIR``
keeps the hosts' logs (``kill -USR1`` on a host logs its asyncio tasks' stacks).

Not part of ``make bench`` (it takes ``--minutes``). Usage::

    .venv/bin/python bench/load.py [--sessions 50] [--minutes 10] [--max-workers N]
                                   [--per-client N] [--port P] [--json OUT]
                                   [--queue [--hosts 2] [--lanes light=4]]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jaxscope.local_server import Served, free_port, serving
from jaxscope.server.frames import frame_objects
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Origin

ROOT = Path(__file__).resolve().parent.parent
SNIPPET = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\nargs = (1.0,)\n"
EXHIBIT = "tracing"

# The most seconds the bench waits for one run's terminal event (queue wait included) before it
# cancels the run and counts it an error.
RUN_TIMEOUT_S = 300.0
# After cancelling such a run, how long to wait for its terminal event before reconnecting.
CANCEL_WAIT_S = 30.0
# Past the deadline, the most seconds the bench goes on (runs in flight, shutting down).
GRACE_S = RUN_TIMEOUT_S + CANCEL_WAIT_S + 60.0
# Bounds of the flags, so that a typo cannot start a runaway bench.
MAX_SESSIONS = 1000
MAX_MINUTES = 120.0
# --per-client's default: more than any pool (the server caps it at --max-workers).
WHOLE_POOL = 1000
# Reconnect attempts in a row after which a session gives up.
MAX_RECONNECTS = 5
TERMINAL = ("run_finished", "run_failed")


@dataclass
class Stats:
    """What the sessions measured (one asyncio loop: no locking needed)."""

    runs: int = 0
    errors: int = 0
    refused: int = 0
    queued_runs: int = 0
    queued_client_share: int = 0
    max_queue_position: int = 0
    latencies_s: list[float] = field(default_factory=list)
    error_kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    # The messages of the failed runs (their first 160 characters), for error_messages.
    error_messages: collections.Counter[str] = field(default_factory=collections.Counter)


@dataclass
class Outcome:
    """One run as the client saw it."""

    terminal: dict[str, Any] | None = None
    latency_s: float | None = None
    started: bool = False
    queued: bool = False
    client_share: bool = False
    max_position: int = 0
    lost: str | None = None  # why the bench lost the run: "dropped" or "client_timeout"


def percentile(values: list[float], p: float) -> float | None:
    """The nearest-rank ``p``-th percentile (0 < p <= 100) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def record(stats: Stats, outcome: Outcome) -> None:
    """Count one run into ``stats`` (see the module docstring for the categories)."""
    stats.runs += 1
    if outcome.queued:
        stats.queued_runs += 1
        stats.queued_client_share += outcome.client_share
        stats.max_queue_position = max(stats.max_queue_position, outcome.max_position)
    if outcome.latency_s is not None:
        stats.latencies_s.append(outcome.latency_s)
    if outcome.lost is not None:
        stats.errors += 1
        stats.error_kinds[outcome.lost] += 1
        return
    event = outcome.terminal
    if event is None or event["type"] != "run_failed":
        return
    kind = str(event.get("kind"))
    if kind == "cancelled":
        return
    stats.errors += 1
    stats.error_kinds[kind] += 1
    stats.error_messages[str(event.get("message", ""))[:160]] += 1
    message = str(event.get("message", "")).lower()
    if "busy" in message or (kind == "timeout" and not outcome.started):
        stats.refused += 1


async def one_run(ws: ClientConnection) -> Outcome:
    """Send one run request and read its events up to the terminal one. Raises
    ``ConnectionClosed`` when the connection drops (the caller counts the run as lost)."""
    run_id = uuid.uuid4().hex[:12]
    request = {"type": "run", "run_id": run_id, "exhibit": EXHIBIT, "code": SNIPPET}
    outcome = Outcome()
    t0 = time.perf_counter()
    await ws.send(json.dumps(request))
    deadline = t0 + RUN_TIMEOUT_S
    cancelled = False
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            if cancelled:
                outcome.lost = "client_timeout"
                return outcome
            await ws.send(json.dumps({"type": "cancel", "run_id": run_id}))
            cancelled = True
            deadline = time.perf_counter() + CANCEL_WAIT_S
            continue
        try:
            frame = await asyncio.wait_for(ws.recv(), timeout=left)
        except TimeoutError:
            continue
        for event in frame_objects(frame):  # one event, or an array of them
            if event.get("run_id") != run_id:
                continue
            kind = event.get("type")
            if kind == "run_accepted":
                continue  # the run queue took it (queue mode): not a start, not a place
            if kind == "run_queued":
                outcome.queued = True
                outcome.client_share |= event.get("reason") == "client_share"
                outcome.max_position = max(outcome.max_position, int(event.get("position", 0)))
            elif kind in TERMINAL:
                outcome.terminal = event
                outcome.latency_s = time.perf_counter() - t0
                if cancelled:
                    outcome.lost = "client_timeout"
                return outcome
            else:
                outcome.started = True


async def session(
    url: str,
    origin: str,
    stop_at: float,
    stats: Stats,
    runs: int | None = None,
    forwarded: str | None = None,
) -> None:
    """One websocket running the snippet back to back until ``stop_at`` (``time.monotonic``),
    or ``runs`` times (a burst); reconnects after a dropped connection, at most
    :data:`MAX_RECONNECTS` times in a row. ``forwarded``: the session's ``X-Forwarded-For``
    (queue mode: a client of its own)."""
    headers = None if forwarded is None else {"X-Forwarded-For": forwarded}
    failures = 0
    done = 0

    def more() -> bool:
        return time.monotonic() < stop_at and (runs is None or done < runs)

    while more() and failures < MAX_RECONNECTS:
        try:
            async with connect(
                url, origin=Origin(origin), max_size=2**26, additional_headers=headers
            ) as ws:
                failures = 0
                while more():
                    done += 1
                    try:
                        outcome = await one_run(ws)
                    except ConnectionClosed:
                        record(stats, Outcome(lost="dropped"))
                        raise
                    record(stats, outcome)
                    if outcome.lost is not None:
                        break  # a run the server never ended: start over on a new connection
        except (OSError, ConnectionClosed, TimeoutError):
            failures += 1
            await asyncio.sleep(1.0)


def student_address(i: int) -> str:
    """The ``i``-th session's forwarded address in queue mode (10.x.y.z: one client each)."""
    return f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


async def load(
    url: str,
    origin: str,
    sessions: int,
    minutes: float,
    stats: Stats,
    runs: int | None = None,
    distinct: bool = False,
) -> None:
    """``sessions`` sessions at once for ``minutes`` (or until each made ``runs`` runs);
    bounded by ``minutes`` + :data:`GRACE_S`. ``distinct``: each session a client of its own
    (``X-Forwarded-For``, queue mode)."""
    stop_at = time.monotonic() + minutes * 60
    tasks = [
        asyncio.ensure_future(
            session(url, origin, stop_at, stats, runs, student_address(i) if distinct else None)
        )
        for i in range(sessions)
    ]
    done, pending = await asyncio.wait(tasks, timeout=minutes * 60 + GRACE_S)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        if not task.cancelled() and task.exception() is not None:
            stats.error_kinds[f"session: {task.exception()!r}"] += 1


async def warm_up(url: str, origin: str) -> None:
    """One run to the end (the first worker started, the exhibit's imports loaded)."""
    async with connect(url, origin=Origin(origin), max_size=2**26) as ws:
        outcome = await one_run(ws)
        if outcome.terminal is None or outcome.terminal["type"] != "run_finished":
            raise RuntimeError(f"warm-up run did not finish: {outcome}")


def _trees_cpu_s(server: int, hosts: list[subprocess.Popen[bytes]]) -> float:
    """The pool hosts' trees' CPU seconds, or (no hosts) the server's tree's."""
    return sum(tree_cpu_s(h.pid) for h in hosts) if hosts else tree_cpu_s(server)


def _own_cpu_s(pid: int) -> float:
    """CPU seconds of the process ``pid`` alone (not its children); 0 once it exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(proc: subprocess.Popen[bytes]) -> float | None:
    """VmRSS of the process (that process only, not its children) in MiB; None once it exited."""
    if proc.poll() is not None:
        return None
    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and every process under it, with the children
    each has reaped (``/proc/PID/stat`` fields 14-17): what the process tree has spent so far.
    The difference between two calls is what its runs cost, whatever else the machine ran."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
    children: dict[int, list[int]] = collections.defaultdict(list)
    for pid, stat in stats.items():
        children[int(stat[1])].append(pid)
    ticks = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is not None:
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        todo += children.get(pid, [])
    return ticks / os.sysconf("SC_CLK_TCK")


def server(port: int, max_workers: int | None, per_client: int) -> AbstractContextManager[Served]:
    """``jaxscope serve`` on 127.0.0.1:``port`` (``local_server.serving``) with the pool's cap and
    the client share (``per_client`` > 0 lifts it to that many workers)."""
    env = dict(os.environ)
    if per_client > 0:
        env["JAXSCOPE_MAX_WORKERS_PER_CLIENT"] = str(per_client)
    args = [] if max_workers is None else ["--max-workers", str(max_workers)]
    return serving(*args, cwd=ROOT, timeout_s=120.0, port=port, env=env)


@contextlib.contextmanager
def queue_deployment(
    port: int, hosts: int, lanes: str, folder: Path
) -> Iterator[tuple[Served, list[subprocess.Popen[bytes]]]]:
    """A ``redis-server`` on a free loopback port (a random password), ``serve --queue`` on
    127.0.0.1:``port`` trusting 127.0.0.1's ``X-Forwarded-For``, and ``hosts`` pool hosts
    (``pool --queue --lanes lanes``) whose heartbeats the web tier sees; all killed on exit."""
    redis_server = shutil.which("redis-server")
    if redis_server is None:
        raise SystemExit("--queue needs redis-server (`make redis` installs it)")
    password = secrets.token_hex(16)
    redis_port = free_port()
    env = {**os.environ, "JAXSCOPE_QUEUE_PASSWORD": password}
    redis_conf = folder / "redis.conf"  # the password in a file, not on a command line
    redis_conf.write_text(
        f'port {redis_port}\nbind 127.0.0.1\nrequirepass {password}\nsave ""\n'
        f"appendonly no\ndir {folder}\n"
    )
    procs: list[subprocess.Popen[bytes]] = [
        subprocess.Popen(
            [redis_server, str(redis_conf)], stdout=subprocess.DEVNULL, start_new_session=True
        )
    ]
    url = f"redis://127.0.0.1:{redis_port}/0"
    exe = str(Path(sys.executable).parent / "jaxscope")
    try:
        for i in range(hosts):
            log = (folder / f"host{i}.log").open("wb")
            procs.append(
                subprocess.Popen(
                    [exe, "pool", "--queue", url, "--lanes", lanes],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        with serving(
            "--queue",
            url,
            "--forwarded-allow-ips",
            "127.0.0.1",
            cwd=ROOT,
            timeout_s=120.0,
            port=port,
            env=env,
        ) as served:
            deadline = time.monotonic() + 180
            while len(pool_state(served.url).get("hosts", {})) < hosts:
                dead = [p.args for p in procs if p.poll() is not None]
                if dead or time.monotonic() > deadline:
                    logs = [(folder / f"host{i}.log").read_text()[-2000:] for i in range(hosts)]
                    raise RuntimeError(f"pool hosts did not come up: {dead} {logs}")
                time.sleep(0.5)
            yield served, procs[1:]
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def pool_state(base: str) -> dict[str, Any]:
    """The ``pool`` part of ``GET /api/health``."""
    with urllib.request.urlopen(base + "/api/health", timeout=10) as r:
        state: dict[str, Any] = json.loads(r.read())["pool"]
        return state


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sessions", type=int, default=50, help="concurrent websockets (50)")
    parser.add_argument("--minutes", type=float, default=10.0, help="how long to run (10)")
    parser.add_argument(
        "--max-workers", type=int, default=None, help="the server's --max-workers (its default)"
    )
    parser.add_argument(
        "--per-client",
        type=int,
        default=WHOLE_POOL,
        help="JAXSCOPE_MAX_WORKERS_PER_CLIENT (default: the whole pool; 0: the server's default)",
    )
    parser.add_argument("--port", type=int, default=None, help="the server's port (a free one)")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    parser.add_argument(
        "--runs-per-session",
        type=int,
        default=None,
        help="a burst: each session makes this many runs, then stops (wall_s: the whole burst)",
    )
    parser.add_argument(
        "--queue",
        action="store_true",
        help="run against serve --queue with --hosts pool hosts and a redis-server (design 0071)",
    )
    parser.add_argument("--hosts", type=int, default=2, help="with --queue: pool hosts (2)")
    parser.add_argument(
        "--lanes", default="light=4", help="with --queue: each host's --lanes (light=4)"
    )
    parser.add_argument(
        "--logs", type=Path, default=None, help="with --queue: keep the hosts' logs in this folder"
    )
    ns = parser.parse_args()
    if not 1 <= ns.hosts <= 16:
        parser.error("--hosts must be 1..16")
    if not 1 <= ns.sessions <= MAX_SESSIONS:
        parser.error(f"--sessions must be 1..{MAX_SESSIONS}")
    if not 0 < ns.minutes <= MAX_MINUTES:
        parser.error(f"--minutes must be in (0, {MAX_MINUTES:g}]")
    if ns.max_workers is not None and ns.max_workers < 1:
        parser.error("--max-workers must be at least 1")
    if ns.per_client < 0:
        parser.error("--per-client must be at least 0")

    port = ns.port if ns.port is not None else free_port()
    base = f"http://127.0.0.1:{port}"
    url = f"ws://127.0.0.1:{port}/api/ws"
    stats = Stats()
    loadavg_start = [round(x, 2) for x in os.getloadavg()]
    with contextlib.ExitStack() as stack:
        hosts: list[subprocess.Popen[bytes]] = []
        if ns.queue:
            folder = ns.logs or Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="load-queue-"))
            )
            folder.mkdir(parents=True, exist_ok=True)
            served, hosts = stack.enter_context(queue_deployment(port, ns.hosts, ns.lanes, folder))
        else:
            served = stack.enter_context(server(port, ns.max_workers, ns.per_client))
        proc = served.proc
        asyncio.run(warm_up(url, base))
        pool = pool_state(base)
        rss_start = rss_mb(proc)
        # The CPU the runs cost: the web tier (the server process alone) and the processes
        # that run user code (the pool hosts' trees, or the server's tree less itself).
        web_start, trees_start = _own_cpu_s(proc.pid), _trees_cpu_s(proc.pid, hosts)
        t0 = time.monotonic()
        asyncio.run(load(url, base, ns.sessions, ns.minutes, stats, ns.runs_per_session, ns.queue))
        wall_s = time.monotonic() - t0
        web_cpu_s = _own_cpu_s(proc.pid) - web_start
        runs_cpu_s = _trees_cpu_s(proc.pid, hosts) - trees_start - (0 if hosts else web_cpu_s)
        rss_end = rss_mb(proc)
        if rss_end is None:
            stats.error_kinds[f"server exited with {proc.returncode}"] += 1
    p50, p95 = percentile(stats.latencies_s, 50), percentile(stats.latencies_s, 95)
    results: dict[str, Any] = {
        "sessions": ns.sessions,
        "minutes": ns.minutes,
        "wall_s": round(wall_s, 1),
        "runs": stats.runs,
        "errors": stats.errors,
        "refused": stats.refused,
        "p50_s": None if p50 is None else round(p50, 3),
        "p95_s": None if p95 is None else round(p95, 3),
        "server_rss_mb_start": rss_start,
        "server_rss_mb_end": rss_end,
        "queued_runs": stats.queued_runs,
        "queued_client_share": stats.queued_client_share,
        "max_queue_position": stats.max_queue_position,
        "web_cpu_s": round(web_cpu_s, 2),
        "workers_cpu_s": round(runs_cpu_s, 2),
        "cpu_s_per_run": round((runs_cpu_s + web_cpu_s) / max(1, stats.runs), 3),
        "loadavg_start": loadavg_start,
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "error_kinds": dict(stats.error_kinds),
        "error_messages": dict(stats.error_messages.most_common(5)),
    }
    if ns.queue:
        results |= {"hosts": ns.hosts, "lanes": ns.lanes, "pool": pool.get("hosts")}
    else:
        max_workers = int(pool["max"])
        per_client = min(ns.per_client, max_workers) if ns.per_client > 0 else -(-max_workers // 2)
        results |= {"max_workers": max_workers, "per_client": per_client}
    text = json.dumps(results)
    print(text)
    if ns.json:
        ns.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
