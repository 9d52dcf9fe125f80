"""Supervisor-side hardening of the sandbox against a hostile snippet (real workers throughout):
bounded stderr, the worker cap and its queue, output after a terminal event, the worker's
environment, the event line limit, and the CLI's file decoding.

Since issue 12 a worker serves one run: the supervisor kills it after the run's terminal event
(``session.worker`` is None between runs, ``session.last_worker`` is the one that served the last
run) and the session's next run gets a fresh worker from the pool."""

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
from jaxscope.protocol import EventModel, RunFailed, RunFinished, RunQueued, StdoutPrinted
from jaxscope.sandbox import session as session_module
from jaxscope.sandbox.namespaces import pids_of_uid
from jaxscope.sandbox.pool import FIRST_START_S, PoolBusy, WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import (
    MAX_EVENT_LINE_BYTES,
    STDERR_TAIL_BYTES,
    WorkerProcess,
    worker_env,
)
from jaxscope.server.app import create_app
from jaxscope.settings import Settings, auto_sizes, settings_from_env

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


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def served_by(session: Session) -> WorkerProcess:
    """The worker that served ``session``'s last run: killed after it, never kept."""
    worker = session.last_worker
    assert worker is not None
    assert session.worker is None and not worker.alive
    return worker


def gone(sandbox: SandboxHarness, worker: WorkerProcess) -> None:
    """Wait for ``worker`` to be reaped and check that nothing of it runs any more: its Python
    (host pid) is gone and, as root, no process of its leased uid is left."""
    sandbox.call(worker.wait_closed())
    assert worker.proc.returncode is not None
    # The session's reaper may still be cleaning up in its thread (kill_uid); killed processes
    # may stay zombies a while (reaped by the host's init): nothing of the uid may still run.
    lease = worker.uid
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
        running(worker.worker_pid)
        or (lease is not None and any(running(p) for p in pids_of_uid(lease.uid)))
    ):
        time.sleep(0.1)
    assert not running(worker.worker_pid)
    if lease is not None:
        assert not any(running(p) for p in pids_of_uid(lease.uid))


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
        worker = served_by(session)
        sandbox.call(worker.wait_closed())  # its stderr is drained to EOF
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


SLEEP = "import time\ntime.sleep(3)\n" + OK


def test_a_run_at_the_pool_cap_waits_in_the_queue_until_a_worker_frees(
    sandbox: SandboxHarness,
) -> None:
    """A run is never refused for capacity: at the cap it waits in the pool's queue (however
    short its wall clock: the limit counts from the worker taking the job), is told its place
    with ``run_queued``, and runs once the worker held by the other session's run is freed.
    :class:`PoolBusy` is only raised to a caller that gives ``acquire`` a timeout."""
    pool = WorkerPool(sandbox.limits, size=0, max_workers=1)
    first, second = Session(pool, EXHIBITS), Session(pool, EXHIBITS)

    async def scenario() -> tuple[list[EventModel], list[EventModel], float, bool]:
        loop = asyncio.get_running_loop()
        holding = asyncio.ensure_future(sandbox.arun(first, SLEEP, wall_s=30))
        while not first.holds_worker():
            await asyncio.sleep(0.05)
        t0 = loop.time()
        with pytest.raises(PoolBusy, match=r"^all 1 sandbox workers are busy; try again$"):
            await pool.acquire(timeout=1.0)
        busy_s = loop.time() - t0
        assert pool.state()["waiting"] == 0  # the refused caller left the queue
        queued = await sandbox.arun(second, OK, wall_s=1.5)
        first_done = holding.done()  # it got its worker only after the first run's was freed
        return await holding, queued, busy_s, first_done

    try:
        held, queued, busy_s, first_done = sandbox.call(scenario())
        assert 0.9 < busy_s < 5.0
        # (The first run may get run_queued too while the worker started for it warms up: the
        # cap of 1 is reached by that starting worker. Not this test's subject.)
        assert isinstance(terminal([e for e in held if not isinstance(e, RunQueued)]), RunFinished)
        assert first_done
        waits = [e for e in queued if isinstance(e, RunQueued)]
        run = [e for e in queued if not isinstance(e, RunQueued)]
        assert waits and queued[: len(waits)] == waits  # before any event of the run itself
        assert (waits[0].position, waits[0].waiting, waits[0].reason) == (1, 1, "pool_full")
        assert {e.run_id for e in waits} == {run[0].run_id}
        assert isinstance(terminal(run), RunFinished)
        state = pool.state()
        assert (state["leased"], state["waiting"], state["max"]) == (0, 0, 1)
        assert served_by(first) is not served_by(second)
    finally:
        sandbox.call(first.close())
        sandbox.call(second.close())
        sandbox.call(pool.close())


def test_a_run_that_waits_for_a_worker_start_is_told_so(
    sandbox: SandboxHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No warm worker ready and the pool not full: the run waits for the worker started for
    it, and ``run_queued`` says so (``worker_starting``, the kind, the typical first start before
    the pool measured one), before any event of the run. A bwrap start (``JAXSCOPE_ZYGOTE=0``)
    takes over a second, so the report (every 0.25 s) comes whatever the machine's load."""
    monkeypatch.setenv("JAXSCOPE_ZYGOTE", "0")
    # Reported after one report interval, not a second: a fast machine's bwrap start may take
    # little over a second, and the test is about what is said, not when.
    monkeypatch.setattr(session_module, "START_REPORT_S", session_module.QUEUE_REPORT_S)
    pool = WorkerPool(sandbox.limits, size=0, max_workers=2)
    session = Session(pool, EXHIBITS, report_starts=True)
    try:
        events = sandbox.call(sandbox.arun(session, OK, wall_s=30))
        waits = [e for e in events if isinstance(e, RunQueued)]
        assert waits and events[: len(waits)] == waits
        first = waits[0]
        assert (first.reason, first.worker_kind, first.position) == ("worker_starting", "jax", 1)
        assert first.estimate_s == FIRST_START_S["jax"]
        assert isinstance(
            terminal([e for e in events if not isinstance(e, RunQueued)]), RunFinished
        )
    finally:
        sandbox.call(session.close())
        sandbox.call(pool.close())


def test_pool_keeps_spares_within_the_cap(sandbox: SandboxHarness) -> None:
    pool = WorkerPool(sandbox.limits, size=3, max_workers=2)

    async def warm() -> tuple[dict[str, int], dict[str, int]]:
        pool.start()
        started = pool.state()
        # Closed only once warm: closing while a worker is spawned is not this test's subject.
        while pool.state()["idle"] < 2:
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)  # no third one follows
        return started, pool.state()

    try:
        started, warmed = sandbox.call(warm())
        assert started["starting"] == 2
        assert (warmed["idle"], warmed["starting"], warmed["spawned"]) == (2, 0, 2)
    finally:
        sandbox.call(pool.close())
    with pytest.raises(ValueError):
        WorkerPool(sandbox.limits, max_workers=0)


def test_max_workers_setting_and_health() -> None:
    assert Settings().max_workers == auto_sizes()[1]  # sized from the machine
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
        assert "run_finished event without this run's tag" in end.message
        assert "from inside the run" in end.message
        first = served_by(session)
        time.sleep(pause_s)
        events = sandbox.run(OK, session=session)
        assert isinstance(terminal(events), RunFinished)
        assert not any(isinstance(e, StdoutPrinted) for e in events)
        second = served_by(session)
        assert second is not first and second.worker_pid != first.worker_pid
        gone(sandbox, first)
    finally:
        sandbox.call(session.close())


def test_worker_exit_after_its_run_is_not_a_crash(sandbox: SandboxHarness) -> None:
    """A worker whose user thread ends the process right after the run (or that the runner
    retires) is not the next run's crash: the next run is served by a fresh worker anyway. In
    its own pid namespace every worker's Python is pid 2, so the workers are told apart by the
    supervisor's handles, not by a printed pid."""
    session = sandbox.session()
    pid = "import os\nprint('pid', os.getpid())\n"
    leaves = (
        "import os, threading, time\n"
        "def bye():\n"
        "    time.sleep(1.0)\n"
        "    os._exit(0)\n"
        "threading.Thread(target=bye, daemon=True).start()\n" + pid + OK
    )

    def printed(events: list[EventModel]) -> str:
        return "".join(e.text for e in events if isinstance(e, StdoutPrinted))

    try:
        first = sandbox.run(leaves, session=session)
        assert isinstance(terminal(first), RunFinished)
        one = served_by(session)
        time.sleep(2.0)
        events = sandbox.run(pid + OK, session=session)
        assert isinstance(terminal(events), RunFinished), events[-1]
        two = served_by(session)
        assert two is not one and two.worker_pid != one.worker_pid
        if sandbox.limits.namespaces:
            assert printed(first) == printed(events) == "pid 2\n"
    finally:
        sandbox.call(session.close())


def test_run_right_after_a_retiring_run_is_not_a_crash(sandbox: SandboxHarness) -> None:
    # A run that leaves a thread alive makes the runner exit right after its terminal event
    # (retirement) while the supervisor kills the worker; the session's next run, sent at once,
    # gets a fresh worker and finishes.
    session = sandbox.session()
    leaves = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n" + OK
    )
    served: list[WorkerProcess] = []
    try:
        for _ in range(3):
            assert isinstance(terminal(sandbox.run(leaves, session=session)), RunFinished)
            served.append(served_by(session))
            events = sandbox.run(OK, session=session)
            assert isinstance(terminal(events), RunFinished), events[-1]
            served.append(served_by(session))
        assert len({id(w) for w in served}) == len(served) == 6
    finally:
        sandbox.call(session.close())


def test_worker_dead_but_not_yet_noticed_is_replaced(
    sandbox: SandboxHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm worker that died before its job (SIGKILLed while idle in the pool) and that the
    supervisor has not noticed yet is replaced transparently: the run is retried once on a
    fresh worker and ends with its own one terminal event, not a crash."""
    pool = WorkerPool(sandbox.limits, size=1)
    session = Session(pool, EXHIBITS)
    acquire = pool.acquire
    killed: list[WorkerProcess] = []

    async def acquire_a_dead_one(**kwargs: object) -> WorkerProcess:
        worker = await acquire(**kwargs)  # type: ignore[arg-type]
        if not killed:
            # No await between the kill and handing it out: the supervisor has not seen it.
            os.kill(worker.worker_pid, signal.SIGKILL)
            assert worker.alive
            killed.append(worker)
        return worker

    monkeypatch.setattr(pool, "acquire", acquire_a_dead_one)
    try:
        sandbox.call(_start(pool))
        events = sandbox.call(sandbox.arun(session, OK))
        assert isinstance(terminal(events), RunFinished)
        assert len(killed) == 1
        assert served_by(session) is not killed[0]
        gone(sandbox, killed[0])
    finally:
        sandbox.call(session.close())
        sandbox.call(pool.close())


async def _start(pool: WorkerPool) -> None:
    pool.start()


# --- 4. the worker's environment ------------------------------------------------------------


def test_worker_env_drops_jaxscope_and_credentials() -> None:
    env = worker_env(
        {
            "PATH": "/usr/bin",
            "HOME": "/root",
            "TMPDIR": "/var/tmp",
            "LANG": "C.UTF-8",
            "TZ": "UTC",
            "CUDA_VISIBLE_DEVICES": "0",
            "NVIDIA_VISIBLE_DEVICES": "all",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "JAXSCOPE_TOKEN": "t",
            "JAXSCOPE_WALL_S": "3",
            "GITHUB_TOKEN": "g",
            "GITHUB_PAT": "ghp_x",
            "AWS_SECRET_ACCESS_KEY": "a",
            "DB_PASSWORD": "p",
            "DATABASE_URL": "postgres://app:hunter2@db.internal:5432/app",
            "SOME_AUTH": "Bearer x",
            "SERVICE_PEM": "-----BEGIN PRIVATE KEY-----",
            "api_key": "k",
            "LD_PRELOAD": "/tmp/evil.so",
            "PYTHONPATH": "/srv/secrets",
            "SSH_AUTH_SOCK": "/tmp/ssh-agent",
            "USER": "root",
            "XLA_FLAGS": "--xla_cpu_enable_fast_math=false",
            "JAX_PLATFORMS": "cpu",
            "JAX_ENABLE_X64": "1",
            # JAX_*/XLA_* names are kept, but not secret-looking ones.
            "JAX_COORDINATOR_TOKEN": "c",
            "JAX_CACHE_API_KEY": "k",
            "XLA_REMOTE_AUTH_HEADER": "h",
            "XLA_SERVICE_PEM": "pem",
            "JAX_METRICS_DSN": "dsn",
            "JAX_PASSWORD": "p",
        }
    )
    assert env["PATH"] == "/usr/bin"
    assert env["HOME"] == env["TMPDIR"] == "/tmp"  # the worker's private /tmp
    assert env["JAX_PLATFORMS"] == "cpu" and env["JAX_ENABLE_X64"] == "1"
    assert env["XLA_FLAGS"].startswith("--xla_cpu_enable_fast_math=false ")
    assert env["PYTHONUNBUFFERED"] == env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    kept = {"LANG", "TZ", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "TF_CPP_MIN_LOG_LEVEL"}
    assert kept <= env.keys()
    assert set(env) == kept | {
        "PATH",
        "HOME",
        "TMPDIR",
        "JAX_PLATFORMS",
        "JAX_ENABLE_X64",
        "XLA_FLAGS",
        "XLA_PYTHON_CLIENT_PREALLOCATE",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
    }
    assert not any("hunter2" in value or "BEGIN PRIVATE" in value for value in env.values())
    assert worker_env({"PATH": "/bin"}, home="/srv/w")["HOME"] == "/srv/w"


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
    but it ends the worker's life: the supervisor kills it right after that terminal, so user
    code still printing and computing behind it holds no worker outside the wall clock, and
    nothing of it reaches the session's next run (a fresh worker)."""
    spin = (
        TAGGED + "os.write(EVENT, (json.dumps({'type': 'run_finished', 'run_id': TAG,"
        " 'duration_ms': 1}) + '\\n').encode())\n"
        + "while True:\n    print('behind the forged terminal')\n"
        + OK
    )
    session = sandbox.session()
    try:
        events = sandbox.run(spin, session=session)
        assert isinstance(terminal(events), RunFinished)
        first = served_by(session)  # already killed when the run returns
        t0 = time.monotonic()
        gone(sandbox, first)
        assert time.monotonic() - t0 < 8.0
        after = sandbox.run(OK, session=session)
        assert isinstance(terminal(after), RunFinished)
        assert not any(isinstance(e, StdoutPrinted) for e in after)
        assert served_by(session) is not first
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
