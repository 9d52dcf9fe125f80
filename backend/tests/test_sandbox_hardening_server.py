"""Supervisor-side hardening of the sandbox against a hostile snippet (real workers throughout):
bounded stderr, the worker cap, output after a terminal event, the worker's environment, the
event line limit, and the CLI's file decoding."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from jaxscope import cli
from jaxscope.protocol import EventModel, RunFailed, RunFinished, StdoutPrinted
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import (
    MAX_EVENT_LINE_BYTES,
    STDERR_TAIL_BYTES,
    worker_env,
)
from jaxscope.server.app import create_app
from jaxscope.settings import Settings, settings_from_env

from exhibits.registry import EXHIBITS
from tests.harness import SandboxHarness, assert_one_terminal

OK = "def f(x):\n    return x * 100.0\nargs = (1.0,)\n"

# Snippet prelude that finds the worker's private event pipe without relying on the runner's
# names: the one write-only pipe that is not stderr (fd 1 and fd 2 share stderr's pipe).
FIND_EVENT_FD = """
import os, stat
def _event_fd():
    err = os.fstat(2).st_ino
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if not stat.S_ISFIFO(st.st_mode) or st.st_ino == err:
            continue
        with open(f"/proc/self/fdinfo/{fd}") as info:
            flags = int(info.read().split("flags:")[1].split()[0], 8)
        if flags & os.O_ACCMODE == os.O_WRONLY:
            return fd
    raise RuntimeError("no event pipe")
EVENT = _event_fd()
"""


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def terminal(events: list[EventModel]) -> RunFinished | RunFailed:
    last = assert_one_terminal(events)
    assert isinstance(last, (RunFinished, RunFailed))
    return last


# --- 1. stderr ------------------------------------------------------------------------------


def test_huge_stderr_lines_keep_a_bounded_tail(sandbox: SandboxHarness) -> None:
    # 24 lines of 16 MiB from a thread: 384 MiB through the supervisor. The old supervisor kept
    # the last 400 lines whole (the adversarial test grew the server to 3.8 GB).
    code = (
        "import os, threading\n"
        "def spam():\n"
        "    line = b'e' * (16 * 2**20) + b'\\n'\n"
        "    for _ in range(24):\n"
        "        os.write(2, line)\n"
        "t = threading.Thread(target=spam)\n"
        "t.start()\n"
        "t.join()\n" + OK
    )
    session = sandbox.session()
    before = rss_bytes()
    try:
        events = sandbox.run(code, session=session, wall_s=60)
        assert isinstance(terminal(events), RunFinished)
        worker = session.worker
        assert worker is not None
        time.sleep(0.5)  # let the drain task read the last chunks
        assert 0 < worker.stderr_kept_bytes() <= STDERR_TAIL_BYTES
        assert worker.stderr_text().strip("e\n") == ""
        assert rss_bytes() - before < 100 * 2**20
    finally:
        sandbox.call(session.close())


def test_death_is_classified_from_the_tail_after_huge_stderr(sandbox: SandboxHarness) -> None:
    code = (
        "import os\n"
        "os.write(2, b'x' * (8 * 2**20) + b'\\n')\n"
        "os.write(2, b'MemoryError: the last words\\n')\n"
        "os._exit(3)\n"
    )
    f = terminal(sandbox.run(code, wall_s=30))
    assert isinstance(f, RunFailed)
    assert f.kind == "memory"
    assert f.message.endswith(": MemoryError: the last words")


# --- 2. the worker cap ----------------------------------------------------------------------


def test_pool_cap_queues_then_fails_with_busy_timeout(sandbox: SandboxHarness) -> None:
    pool = WorkerPool(sandbox.limits, size=0, max_workers=1)
    first, second = Session(pool, EXHIBITS), Session(pool, EXHIBITS)
    try:
        assert isinstance(terminal(sandbox.run(OK, session=first)), RunFinished)
        assert pool.state()["leased"] == 1

        t0 = time.monotonic()
        busy = terminal(sandbox.run(OK, session=second, wall_s=1.5))
        assert isinstance(busy, RunFailed) and busy.kind == "timeout"
        assert busy.message == "all 1 sandbox workers are busy; try again"
        assert 1.4 < time.monotonic() - t0 < 5.0
        state = pool.state()
        assert (state["leased"], state["idle"], state["starting"], state["max"]) == (1, 0, 0, 1)

        # A waiting run gets the worker slot as soon as the other session closes.
        async def wait_then_close() -> list[EventModel]:
            waiting = asyncio.ensure_future(sandbox.arun(second, OK, wall_s=30))
            await asyncio.sleep(1.0)
            assert pool.state()["waiting"] == 1
            assert not waiting.done()
            await first.close()
            return await waiting

        assert isinstance(terminal(sandbox.call(wait_then_close())), RunFinished)
        assert pool.state()["leased"] == 1
    finally:
        sandbox.call(first.close())
        sandbox.call(second.close())
        sandbox.call(pool.close())


def test_pool_keeps_spares_within_the_cap(sandbox: SandboxHarness) -> None:
    pool = WorkerPool(sandbox.limits, size=3, max_workers=2)

    async def start() -> dict[str, int]:
        pool.start()
        return pool.state()

    try:
        assert sandbox.call(start())["starting"] == 2
    finally:
        sandbox.call(pool.close())
    with pytest.raises(ValueError):
        WorkerPool(sandbox.limits, max_workers=0)


def test_max_workers_setting_and_health() -> None:
    assert Settings().max_workers == 8
    assert settings_from_env({"JAXSCOPE_MAX_WORKERS": "5"}).max_workers == 5
    settings = Settings(workers=0, max_workers=3, check_exhibits=False)
    with TestClient(create_app(settings), base_url="http://localhost:8000") as client:
        pool = client.get("/api/health").json()["pool"]
    assert (pool["max"], pool["leased"], pool["idle"]) == (3, 0, 0)


# --- 3. output after the terminal event -----------------------------------------------------

FORGED = (
    FIND_EVENT_FD
    + "import time\n"
    + 'os.write(EVENT, b\'{"type":"run_finished","duration_ms":1}\\n\')\n'
    + "time.sleep(1.0)\n"
    + "print('late print from the forged run')\n"
    + OK
)


@pytest.mark.parametrize("pause_s", [0.0, 2.5], ids=["next-run-at-once", "next-run-later"])
def test_output_after_a_terminal_never_reaches_the_next_run(
    sandbox: SandboxHarness, pause_s: float
) -> None:
    """A terminal event forged without the job's unguessable tag is refused at once (the run
    ends ``invalid_event`` and the worker is killed); the next run starts on a fresh worker and
    none of the forged run's output reaches it."""
    session = sandbox.session()
    try:
        forged = sandbox.run(FORGED, session=session)
        end = terminal(forged)
        assert isinstance(end, RunFailed) and end.kind == "invalid_event"
        assert "another job" in end.message
        first = session.worker
        time.sleep(pause_s)
        events = sandbox.run(OK, session=session)
        assert isinstance(terminal(events), RunFinished)
        assert not any(isinstance(e, StdoutPrinted) for e in events)
        assert session.worker is not None and session.worker is not first
        assert first is None or not first.alive
    finally:
        sandbox.call(session.close())


def test_worker_exit_after_its_run_is_not_a_crash(sandbox: SandboxHarness) -> None:
    # The thread left alive makes the runner retire right after the terminal event, and the
    # thread itself ends the process a second later: either exit may already have been seen when
    # the run returns, so the workers are told apart by the pid each run prints, not by
    # ``session.worker`` at that instant.
    session = sandbox.session()
    pid = "import os\nprint('pid', os.getpid())\n"
    leaves = (
        "import os, threading, time\n"
        "def bye():\n"
        "    time.sleep(1.0)\n"
        "    os._exit(0)\n"
        "threading.Thread(target=bye, daemon=True).start()\n" + pid + OK
    )

    def printed_pid(events: list[EventModel]) -> str:
        text = "".join(e.text for e in events if isinstance(e, StdoutPrinted))
        assert text.startswith("pid "), text
        return text.split()[1]

    try:
        first = sandbox.run(leaves, session=session)
        assert isinstance(terminal(first), RunFinished)
        time.sleep(2.0)
        events = sandbox.run(pid + OK, session=session)
        assert isinstance(terminal(events), RunFinished), events[-1]
        assert printed_pid(events) != printed_pid(first)
        assert session.worker is not None and str(session.worker.pid) == printed_pid(events)
    finally:
        sandbox.call(session.close())


def test_run_right_after_a_retiring_run_is_not_a_crash(sandbox: SandboxHarness) -> None:
    # A run that leaves a thread alive makes the runner exit right after its terminal event
    # (retirement); the session's next run, sent at once, races that exit.
    session = sandbox.session()
    leaves = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n" + OK
    )
    try:
        for _ in range(3):
            assert isinstance(terminal(sandbox.run(leaves, session=session)), RunFinished)
            first = session.worker
            events = sandbox.run(OK, session=session)
            assert isinstance(terminal(events), RunFinished), events[-1]
            assert session.worker is not first
    finally:
        sandbox.call(session.close())


def test_worker_dead_but_not_yet_noticed_is_replaced(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    try:
        assert isinstance(terminal(sandbox.run(OK, session=session)), RunFinished)
        first = session.worker
        assert first is not None

        async def kill_then_run() -> list[EventModel]:
            # No await between the kill and the run: the supervisor has not seen the exit.
            os.kill(first.pid, signal.SIGKILL)
            assert first.alive
            return await sandbox.arun(session, OK)

        events = sandbox.call(kill_then_run())
        assert isinstance(terminal(events), RunFinished)
        assert session.worker is not None and session.worker.pid != first.pid
    finally:
        sandbox.call(session.close())


# --- 4. the worker's environment ------------------------------------------------------------


def test_worker_env_drops_jaxscope_and_credentials() -> None:
    env = worker_env(
        {
            "PATH": "/usr/bin",
            "HOME": "/root",
            "JAXSCOPE_TOKEN": "t",
            "JAXSCOPE_WALL_S": "3",
            "GITHUB_TOKEN": "g",
            "AWS_SECRET_ACCESS_KEY": "a",
            "DB_PASSWORD": "p",
            "api_key": "k",
            "XLA_FLAGS": "--xla_cpu_enable_fast_math=false",
            "JAX_PLATFORMS": "cpu",
        }
    )
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/root"
    assert env["JAX_PLATFORMS"] == "cpu"
    assert env["XLA_FLAGS"].startswith("--xla_cpu_enable_fast_math=false ")
    for name in ("JAXSCOPE_TOKEN", "JAXSCOPE_WALL_S", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"):
        assert name not in env
    assert "DB_PASSWORD" not in env and "api_key" not in env


def test_token_never_reaches_user_code(
    sandbox: SandboxHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAXSCOPE_TOKEN", "s3cret-token-123")
    pool = WorkerPool(sandbox.limits, size=0)  # spawns after the variable is set
    session = Session(pool, EXHIBITS)
    code = "import os\nprint(sorted(os.environ.items()))\n" + OK
    try:
        events = sandbox.run(code, session=session)
    finally:
        sandbox.call(session.close())
        sandbox.call(pool.close())
    assert isinstance(terminal(events), RunFinished)
    printed = "".join(e.text for e in events if isinstance(e, StdoutPrinted))
    assert "PATH" in printed
    assert "s3cret-token-123" not in printed and "JAXSCOPE_" not in printed


def test_cli_help_warns_that_token_flag_is_visible(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "prefer the JAXSCOPE_TOKEN environment variable" in help_text


# --- 5. event line size ---------------------------------------------------------------------


def test_event_line_over_the_limit_is_invalid_event_naming_its_type(
    sandbox: SandboxHarness,
) -> None:
    code = (
        FIND_EVENT_FD
        + 'line = b\'{"seq":0,"run_id":"","type":"stdout_printed","text":"\'\n'
        + f"os.write(EVENT, line + b'a' * {MAX_EVENT_LINE_BYTES + 10} + b'\"}}\\n')\n"
    )
    f = terminal(sandbox.run(code, wall_s=30))
    assert isinstance(f, RunFailed)
    assert f.kind == "invalid_event"
    assert f.message == (
        f"the worker wrote a stdout_printed event line over {MAX_EVENT_LINE_BYTES:,} bytes"
    )
    assert f.explanation is not None and "too many eqns or argument leaves" in f.explanation


def test_a_jaxpr_of_thousands_of_eqns_fits_the_line_limit(sandbox: SandboxHarness) -> None:
    # 3000 x 3 chained eqns: the jaxpr_staged line is ~4.8 MiB (measured), a third of the limit.
    code = (
        "import jax.numpy as jnp\n"
        "def f(x):\n"
        "    for i in range(3000):\n"
        "        x = jnp.sin(x) * 1.0001 + i\n"
        "    return x\n"
        "args = (jnp.ones(8),)\n"
    )
    events = sandbox.run(code, wall_s=60)
    assert isinstance(terminal(events), RunFinished)
    staged = [e for e in events if e.type == "jaxpr_staged"]
    assert staged
    biggest = max(len(e.model_dump_json()) for e in staged)
    assert 2**20 < biggest < MAX_EVENT_LINE_BYTES // 2


# --- 6. CLI file decoding -------------------------------------------------------------------


def test_cli_reads_a_file_with_a_bom(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbf" + OK.encode())
    assert cli.main(["run", "tracing", str(path), "--print", "jaxpr"]) == 0
    assert "mul" in capsys.readouterr().out


def test_cli_refuses_a_non_utf8_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.py"
    path.write_bytes("# caf\xe9\n".encode("latin-1") + OK.encode())
    assert cli.main(["run", "tracing", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"jaxscope run: {path} is not UTF-8 text: ")
    assert err.count("\n") == 1


# --- the fixture's pool is not disturbed by the tests above ---------------------------------


@pytest.fixture(autouse=True)
def _no_leaked_workers(sandbox: SandboxHarness) -> Iterator[None]:
    yield
    assert sandbox.pool.state()["leased"] == 0


# --- forged events that carry the job's own tag (user code can read it from sys.stdout) -------

TAGGED = FIND_EVENT_FD + "import json, sys\nTAG = sys.stdout.ctx.run_id\n"


def test_computing_after_a_forged_terminal_gets_the_worker_killed(
    sandbox: SandboxHarness,
) -> None:
    """A terminal forged WITH the job's tag is accepted (it cannot be told from the real one),
    but the worker must then sit idle: user code still computing behind it is killed within
    about a second of CPU, so it cannot hold a worker outside the wall clock."""
    spin = (
        TAGGED + "os.write(EVENT, (json.dumps({'type': 'run_finished', 'run_id': TAG,"
        " 'duration_ms': 1}) + '\\n').encode())\n" + "while True:\n    pass\n" + OK
    )
    session = sandbox.session()
    try:
        events = sandbox.run(spin, session=session)
        assert isinstance(terminal(events), RunFinished)
        first = session.worker
        assert first is not None
        deadline = time.monotonic() + 8
        while first.alive and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not first.alive
        assert first.idle_fault is not None and first.idle_fault.startswith("computed for")
        after = sandbox.run(OK, session=session)
        assert isinstance(terminal(after), RunFinished)
    finally:
        sandbox.call(session.close())


def test_forged_output_volume_is_capped_per_run(sandbox: SandboxHarness) -> None:
    """Printed output is capped in the worker; events forged on the pipe meet the supervisor's
    per-run byte cap instead of flooding the browser."""
    flood = (
        TAGGED + "line = (json.dumps({'type': 'stdout_printed', 'run_id': TAG, 'stage': 'load',"
        " 'text': 'Z' * (8 * 2**20)}) + '\\n').encode()\n"
        + "for _ in range(12):\n    os.write(EVENT, line)\n"
        + OK
    )
    events = sandbox.run(flood)
    end = terminal(events)
    assert isinstance(end, RunFailed) and end.kind == "invalid_event"
    assert "bytes of events in one run" in end.message
    printed = sum(len(e.text) for e in events if isinstance(e, StdoutPrinted))
    assert printed <= 64 * 2**20
