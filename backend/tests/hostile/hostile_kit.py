"""What every hostile input of the sandbox suite checks (issue 12): a run through a real pool
and session, its one terminal event, and that nothing of its worker is left behind on the host.

:func:`run` drives one snippet in a session of its own (closed after) or a given one and returns
an :class:`Outcome`: the events with the time each arrived, and the worker that served the run
(its leased uid, as root, and its host pid). :func:`assert_nothing_left` then checks, once the
session is closed: no process of that uid (or, without root, the worker's Python) is left, no
socket of the uid listens or is bound in the host's network namespace, no file of the uid sits
in the host directories a snippet could aim at, and host paths a snippet tried to write are as
they were (:class:`HostPaths`).

Nothing here deletes anything: the suite only reads the host (see the safety rules in the
module docstrings of the test files)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import jaxscope
from jaxscope.protocol import (
    EventModel,
    RunFailed,
    RunFinished,
    RunRequest,
    RunStarted,
    StdoutPrinted,
)
from jaxscope.sandbox.namespaces import pids_of_uid, readonly_paths
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import WorkerProcess

import exhibits
from tests.harness import REPO, SandboxHarness, assert_one_terminal

# What a fresh worker's /tmp holds: nothing, unless the install itself (a checkout, a venv) lives
# under /tmp, whose read-only binds then appear there (``namespaces.bwrap_argv`` mounts the
# private /tmp first and binds the install over it). Sorted top-level names.
TMP_BINDS: list[str] = sorted(
    {Path(p).relative_to("/tmp").parts[0] for p in readonly_paths() if p.startswith("/tmp/")}
)

ROOT = os.geteuid() == 0
# Makes a snippet a valid tracing snippet, so that it finishes when nothing before it failed.
OK_TAIL = "\ndef f(x):\n    return x\nargs = (1.0,)\n"
# An ordinary run (the other session's, meanwhile).
SIN = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2.0\nargs = (jnp.ones(3),)\n"

JAXSCOPE_DIR = Path(jaxscope.__file__).resolve().parent
EXHIBITS_DIR = Path(exhibits.__file__).resolve().parent
SITE_PACKAGES = Path(next(p for p in sys.path if p.endswith("site-packages")))
# Host directories a snippet might try to drop a file in (checked for files of the worker's uid).
HOST_DIRS = (
    Path("/tmp"),
    Path("/var/tmp"),
    Path("/dev/shm"),
    Path("/root"),
    Path.home(),
    REPO,
    REPO / "backend",
    JAXSCOPE_DIR,
    EXHIBITS_DIR,
    SITE_PACKAGES,
)

Watch = Callable[[EventModel, Session], None]


@dataclass
class Outcome:
    """One run: its events (with arrival times, monotonic s) and the worker that served it."""

    events: list[EventModel]
    stamps: list[float]
    worker: WorkerProcess | None
    # When the run was asked for (``time.time()``).
    started: float = 0.0
    uid: int | None = None
    worker_pid: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def terminal(self) -> RunFinished | RunFailed:
        terminal = assert_one_terminal(self.events)
        assert isinstance(terminal, (RunFinished, RunFailed))
        return terminal

    def failed(self, kind: str | None = None) -> RunFailed:
        terminal = self.terminal
        assert isinstance(terminal, RunFailed), terminal
        if kind is not None:
            assert terminal.kind == kind, terminal
        return terminal

    def finished(self) -> RunFinished:
        terminal = self.terminal
        assert isinstance(terminal, RunFinished), terminal
        return terminal

    @property
    def printed(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, StdoutPrinted))

    @property
    def prints(self) -> list[StdoutPrinted]:
        return [e for e in self.events if isinstance(e, StdoutPrinted)]

    @property
    def run_s(self) -> float:
        """Seconds from ``run_started`` (the worker took the job) to the terminal event."""
        started = next(
            (t for t, e in zip(self.stamps, self.events, strict=True) if isinstance(e, RunStarted)),
            self.stamps[0],
        )
        return self.stamps[-1] - started

    @property
    def ended_at(self) -> float:
        return self.stamps[-1]


async def arun(
    harness: SandboxHarness,
    code: str,
    *,
    session: Session | None = None,
    wall_s: float | None = None,
    exhibit: str = "tracing",
    watch: Watch | None = None,
) -> Outcome:
    """Run ``code`` in ``session`` (a fresh one, closed after, when None). ``watch`` sees each
    event as it arrives, on the loop thread (keep it short)."""
    own = session is None
    sess = session if session is not None else harness.session()
    events: list[EventModel] = []
    stamps: list[float] = []
    workers: list[WorkerProcess] = []

    async def emit(event: EventModel) -> None:
        events.append(event)
        stamps.append(time.monotonic())
        if sess.worker is not None and sess.worker not in workers:
            workers.append(sess.worker)
        if watch is not None:
            watch(event, sess)

    request = RunRequest(run_id=harness.run_id(), exhibit=exhibit, code=code)
    started = time.time() - 1.0
    try:
        await sess.run(request, emit, wall_s=wall_s)
    finally:
        if own:
            await sess.close()
    worker = sess.last_worker
    if worker is None and workers:
        worker = workers[-1]
    outcome = Outcome(events=events, stamps=stamps, worker=worker, started=started)
    if worker is not None:
        outcome.uid = worker.uid.uid if worker.uid is not None else None
        outcome.worker_pid = worker.worker_pid
    return outcome


def run(
    harness: SandboxHarness,
    code: str,
    *,
    session: Session | None = None,
    wall_s: float | None = None,
    exhibit: str = "tracing",
    watch: Watch | None = None,
    timeout: float = 120.0,
) -> Outcome:
    """:func:`arun` from a synchronous test."""
    return harness.call(
        arun(harness, code, session=session, wall_s=wall_s, exhibit=exhibit, watch=watch),
        timeout=timeout,
    )


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def describe(pids: Iterable[int], most: int = 20) -> list[str]:
    """``pid (state, wchan): cmdline`` of the first ``most`` pids still there, then how many
    more (the state and the kernel function it waits in tell a slow teardown from a stuck
    process)."""
    found = []
    pids = list(pids)
    for pid in pids[:most]:
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                words = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
            state = wchan = "?"
            with contextlib.suppress(OSError, IndexError):
                with open(f"/proc/{pid}/stat", "rb") as stat:
                    text = stat.read()
                state = text[text.rfind(b")") + 2 :].split()[0].decode()
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/wchan") as chan:
                    wchan = chan.read() or "-"
            found.append(f"{pid} ({state}, {wchan}): {words[:200]}")
    if len(pids) > most:
        found.append(f"... and {len(pids) - most} more")
    return found


def processes_left(outcome: Outcome) -> list[int]:
    """Host pids still running as the worker's uid (as root) or the worker's Python itself."""
    if outcome.uid is not None:
        return list(pids_of_uid(outcome.uid))
    if outcome.worker_pid is not None and alive(outcome.worker_pid):
        return [outcome.worker_pid]
    return []


def sockets_of_uid(uid: int) -> list[str]:
    """Lines of the host's ``/proc/net/{tcp,tcp6,udp,udp6}`` owned by ``uid`` (a listening or
    bound socket a worker made in the host's network namespace)."""
    found = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        with contextlib.suppress(OSError):
            with open(f"/proc/net/{table}") as lines:
                for line in list(lines)[1:]:
                    fields = line.split()
                    if len(fields) > 7 and fields[7] == str(uid):
                        found.append(f"{table}: {line.strip()}")
    return found


def files_of_uid(uid: int, since: float = 0.0) -> list[str]:
    """Entries of :data:`HOST_DIRS` owned by ``uid`` and changed since ``since`` (``time.time``
    s; uids are reused, and an earlier holder of the uid may have left files, e.g. the working
    directory of a worker run without namespaces by another test)."""
    found = []
    for folder in HOST_DIRS:
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_uid == uid and st.st_ctime >= since:
                        found.append(entry.path)
    return found


class HostPaths:
    """Host paths a snippet tries to create or change: their state now, to compare later."""

    def __init__(self, paths: Iterable[str | Path]) -> None:
        self.before = {str(p): self._state(str(p)) for p in paths}

    @staticmethod
    def _state(path: str) -> tuple[int, int, int] | None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def changed(self) -> list[str]:
        return [p for p, state in self.before.items() if self._state(p) != state]


def wait_gone(outcome: Outcome, timeout_s: float = 40.0) -> None:
    """Wait (polling) until no process of the run's worker is left; fail naming them. The wait
    covers the worker's own clean-up (``namespaces.kill_uid``, up to 30 s): a fork bomb's
    hundreds of processes took over 10 s to go on a 2-core machine loaded by a CI run."""
    deadline = time.monotonic() + timeout_s
    while left := processes_left(outcome):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"processes of the worker (uid {outcome.uid}) left behind: {describe(left)}"
            )
        time.sleep(0.05)


def assert_nothing_left(outcome: Outcome, host: HostPaths | None = None) -> None:
    """After the run's session closed: no process, socket or file of the worker on the host,
    and the host paths in ``host`` unchanged."""
    assert outcome.worker is not None, "no worker served the run"
    wait_gone(outcome)
    if outcome.uid is not None:
        assert not sockets_of_uid(outcome.uid), sockets_of_uid(outcome.uid)
        left = files_of_uid(outcome.uid, since=outcome.started)
        assert not left, f"files of the worker's uid {outcome.uid} on the host: {left}"
    if host is not None:
        assert not host.changed(), f"host paths changed: {host.changed()}"


def ns_depth(pid: int) -> int | None:
    """How many pid namespaces ``pid`` is in (the ``NSpid`` field's length), or None."""
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return len(line.split()) - 1
    return None


def host_depth() -> int:
    depth = ns_depth(os.getpid())
    assert depth is not None
    return depth


async def _alongside(
    harness: SandboxHarness, code: str, wall_s: float | None, delay_s: float, ok_code: str
) -> tuple[Outcome, Outcome]:
    hostile = asyncio.ensure_future(arun(harness, code, wall_s=wall_s))
    await asyncio.sleep(delay_s)
    ok = await arun(harness, ok_code)
    return await hostile, ok


def alongside(
    harness: SandboxHarness,
    code: str,
    *,
    wall_s: float | None = None,
    delay_s: float = 1.0,
    ok_code: str = SIN,
) -> tuple[Outcome, Outcome]:
    """Run ``code`` in one session and, ``delay_s`` later, an ordinary run in another: the
    hostile outcome and the ordinary one (which must not have waited for the hostile one)."""
    return harness.call(_alongside(harness, code, wall_s, delay_s, ok_code), timeout=180)


# An ordinary run takes well under a second once it has its worker; a stalled server (event
# loop blocked by another session's hostile run) would hold it for the hostile run's length.
NOT_STALLED_S = 5.0


def assert_served_meanwhile(hostile: Outcome, ok: Outcome, *, ends_first: bool = True) -> None:
    """The ordinary run finished within :data:`NOT_STALLED_S` of taking its job, and (with
    ``ends_first``, for a hostile run that lasts) before the hostile run ended."""
    ok.finished()
    assert ok.run_s < NOT_STALLED_S, f"the ordinary run took {ok.run_s:.1f} s"
    if ends_first:
        assert ok.ended_at < hostile.ended_at, "the ordinary run waited for the hostile one"


_CREDIT = re.compile(r"and ([0-9.]+) s more while the busy machine kept it waiting for a CPU")


def allowed_s(outcome: Outcome, wall_s: float, slack_s: float = 1.5) -> float:
    """How long the run may take: its wall limit, plus the time a busy machine made it wait
    (``settings.wait_credit``, design 0046: a flood is CPU-bound, and this machine runs other
    test processes beside it): what a wall-clock timeout's message says was credited; for any
    other end (finished, or the CPU-time limit, which a CPU-bound run given the credit may reach
    first), the credit's cap (the limit again); plus the slack."""
    terminal = outcome.terminal
    if not (isinstance(terminal, RunFailed) and "wall-clock limit" in terminal.message):
        return 2 * wall_s + slack_s
    credit = _CREDIT.search(terminal.message)
    return wall_s + (float(credit.group(1)) if credit else 0.0) + slack_s
