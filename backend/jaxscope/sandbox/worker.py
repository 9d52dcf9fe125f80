"""The supervisor's handle on one sandbox worker process: spawn, run one job, kill, classify.

A :class:`WorkerProcess` is spawned with ``asyncio.create_subprocess_exec`` (never forked from a
process holding JAX) in a new session (so the whole process group can be killed) with a temporary
working directory and ``--xla_force_host_platform_device_count=8`` added to ``XLA_FLAGS``.
:meth:`WorkerProcess.run` sends one job, re-validates every line the worker writes with
``EVENT_ADAPTER``, assigns ``seq``/``run_id``, enforces the wall-clock limit and cancellation,
and guarantees exactly one terminal event, synthesising it when the worker cannot (see
:func:`classify_death`).

The supervisor trusts nothing the worker writes (user code runs there): each job is tagged with
its own unguessable ``run_id`` (``job-N-<random>``) and only events carrying it are accepted;
whatever the worker writes between a terminal event and its next job, and any CPU it spends
then beyond :data:`IDLE_CPU_BUDGET_S`, gets it killed (a forged terminal, or code the user left
running); stderr is kept as a bounded tail; one event line is at most
:data:`MAX_EVENT_LINE_BYTES` and one run's events at most :data:`MAX_RUN_BYTES`. A worker
found dead or misbehaving before a job produced any event raises :class:`WorkerGone`, so the
session retries that job on a fresh worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import asdict
from typing import Any

from pydantic import ValidationError

from exhibits.registry import run_budget
from jaxscope.protocol import (
    EVENT_ADAPTER,
    BudgetScaled,
    DetailFailed,
    ErrorKind,
    EventModel,
    RunFailed,
    RunFinished,
    RunRequest,
    SourceLoc,
    Stage,
    StageStarted,
    StdoutPrinted,
    WorkerKind,
    is_terminal,
)
from jaxscope.sandbox.env import DEVICE_COUNT_FLAG as DEVICE_COUNT_FLAG
from jaxscope.sandbox.env import worker_env as worker_env
from jaxscope.sandbox.forked import ForkedProcess, TemplateError, start_forked, zygote_problem
from jaxscope.sandbox.kinds import (
    kind_problem,
    package_folders,
    python_of,
    runner_command,
    tpu_site,
    venv_paths,
)
from jaxscope.sandbox.namespaces import (
    SandboxUnavailable,
    UidLease,
    become_subreaper,
    bwrap_argv,
    kill_uid,
    lease_uid,
    python_in_sandbox,
    reap_stray_sandboxes,
)
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME
from jaxscope.settings import (
    TRACE_GROWTH_EQNS,
    Limits,
    load_credit,
    load_limit,
    scaled_limit,
    trace_kept_growing,
    wait_credit,
)
from jaxscope.summaries import range_ids

log = logging.getLogger(__name__)

Emit = Callable[[EventModel], Awaitable[None]]

# Failures the supervisor itself declares when it kills (or loses) the worker: their
# ``stage`` is the last ``stage_started`` the worker sent (the worker cannot report it).
KILLED_KINDS: frozenset[ErrorKind] = frozenset({"timeout", "memory", "worker_crashed"})

# One event line may carry a whole optimized HLO module; anything longer is an invalid event.
# Measured (docs/design/0001-sandbox.md, "Hardening"): the examples' biggest line is 24 KiB; a
# jaxpr_staged costs ~1.6 KiB per eqn (3000 eqns: 4.8 MiB), so 16 MiB admits ~10 000 eqns while
# bounding what one worker can make the server buffer (at most twice this, per worker).
MAX_EVENT_LINE_BYTES = 16 * 2**20
# Event lines longer than this are validated in a thread, not on the server's event loop.
VALIDATE_OFF_LOOP_BYTES = 256 * 2**10
# All event lines of one run together: bounds what a run can send to a browser (the runner caps
# prints at 1 MiB; user code that writes forged events to the event pipe meets this cap).
MAX_RUN_BYTES = 64 * 2**20
# The detail ids (summaries and ranges, design 0045) one run may register: each is kept while the
# worker is kept for details. A 32,000-eqn loop's JVP registers about 2,300; a run that forges
# more (a snippet can replace the runner's writer) is ended rather than held in memory.
MAX_RUN_DETAIL_IDS = 50_000
# Between jobs a worker must sit idle: more CPU than this (seconds) after a run's terminal event
# means user code is still computing (e.g. behind a forged terminal event), and it is killed.
IDLE_CPU_BUDGET_S = 1.0
# The CPU seconds a worker kept for details may spend after its run ended, all answers
# included (an answer is a few milliseconds of serialisation): past it, it is killed.
DETAILS_CPU_BUDGET_S = 5.0
# What a page is told when it asks for a detail of a run whose worker is gone.
DETAILS_GONE = (
    "this run's details are gone (the session ran again, or its worker was retired or lent to "
    "another run): run again to see them"
)
IDLE_POLL_S = 0.5
# How much of a worker's stderr the supervisor keeps (its tail), for death classification.
STDERR_TAIL_BYTES = 64 * 2**10
STDERR_CHUNK_BYTES = 64 * 2**10
START_TIMEOUT_S = 120.0

# Text a dying worker writes to stderr when it ran out of memory: Python's MemoryError, C++'s
# std::bad_alloc (RLIMIT_AS hit inside XLA; then SIGABRT), XLA's RESOURCE_EXHAUSTED, abseil's
# failed mmap (errno 12 = ENOMEM) and pthread_create failures under RLIMIT_AS.
MEMORY_MARKERS = (
    "MemoryError",
    "bad_alloc",
    "RESOURCE_EXHAUSTED",
    "Out of memory",
    "out of memory",
    "mmap error: 12",
    "Cannot allocate memory",
    "pthread_create() failed",
)


class WorkerStartError(RuntimeError):
    """A worker died or stalled before its ready handshake (message: exit status, stderr tail)."""


class WorkerGone(RuntimeError):
    """The worker was dead, or wrote events of an earlier job, before the current job produced
    any event: nothing was emitted for the job, which can be retried on a fresh worker."""


def package_roots() -> list[str]:
    """The folders that hold the ``jaxscope`` and ``exhibits`` packages (real paths; one when
    both lie in one folder)."""
    return list(dict.fromkeys(package_folders().values()))


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads), from ``/proc/PID/stat``;
    None when the process is gone or ``/proc`` cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read().decode("ascii", "replace")
    except OSError:
        return None
    # Fields after the command name (which may hold spaces, in parentheses): utime is field 14,
    # stime field 15 (1-based), counted in clock ticks.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        ticks = int(fields[11]) + int(fields[12])
    except (IndexError, ValueError):
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


# The signals a process's own timers send (signal.alarm, signal.setitimer).
_TIMER_SIGNALS = frozenset({signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF})


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


# How often (in events) the supervisor re-checks a run's size against its limits.
SIZE_CHECK_EVERY = 256


def run_delay_s(pid: int) -> float | None:
    """Seconds the main thread of process ``pid`` was runnable but waiting for a CPU (the
    scheduler's ``run_delay``, the second field of ``/proc/PID/schedstat``, in ns); None when the
    process is gone or the kernel does not keep scheduler statistics. The main thread is where a
    worker traces, compiles and dispatches: XLA's own threads waiting in parallel are not added."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as stat:
            fields = stat.read().split()
        return int(fields[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


# What a run whose worker died out of memory (``std::bad_alloc`` in XLA's compile, an mmap the
# address-space limit refused) is told; errors.MEMORY_EXPLANATION/MEMORY_FIX tell the same to a
# MemoryError the snippet's own code raised, caught inside the worker.
DEATH_BY_MEMORY_HELP = (
    "The worker process ran out of the memory a run may use (its address-space limit) and "
    "died: in the snippet's own arrays, in JAX's tracing, or in XLA's compile of a large "
    "program, which needs memory that grows with the program's size.",
    "Try a smaller program or a part of it (fewer layers or loop iterations, a smaller batch), "
    "or a higher limit (`jaxscope run EXHIBIT FILE --memory-gib G`, or `jaxscope serve "
    "--memory-gib G`; 0 = no limit).",
)


def limit_help(failed: RunFailed, eqns: int | None) -> str | None:
    """What to try after a run hit its wall-clock limit at ``failed.stage``, for a program of
    ``eqns`` eqns (None when its limit was not scaled: a small program, or none shown yet).
    None for any other failure (its explanation is kept)."""
    if failed.kind != "timeout":
        return failed.explanation
    longer = (
        "a longer limit (`jaxscope run EXHIBIT FILE --timeout S`, or `jaxscope serve --timeout S`)"
    )
    if failed.stage == "load":
        return (
            "The snippet's module body (the code outside `f`: building the model, its "
            "parameters, the arguments) did not finish within the limit; it has that whole "
            "limit to itself, and its time does not count against the rest of the run. Is "
            "there an endless loop outside `f`? Otherwise make the model smaller, or try "
            f"{longer}."
        )
    if failed.stage == "trace" and eqns is None:
        return (
            "JAX was still tracing `f` (running its Python once on tracers) at the limit. A "
            "large program traces slowly (a model built in Python, a long Python loop: each "
            "iteration is unrolled into the jaxpr, one copy per iteration), and a loop without "
            "an end (`while True:`, or a bound that keeps growing) never finishes. For a loop, "
            "`lax.fori_loop`, `lax.while_loop` or `lax.scan` keep one copy of the body. "
            f"Otherwise try a part of the program, or {longer}."
        )
    if failed.stage in ("compile", "call") and eqns is not None:
        return (
            f"XLA's compile time grows with the program: {eqns:,} eqns can take minutes to "
            "compile in plain JAX too (`jax.jit(f).lower(*args).compile()`). A Python loop is "
            "unrolled into the jaxpr, one copy per iteration; `lax.fori_loop` or `lax.scan` "
            "keeps one copy of its body and compiles in seconds. Or try a part of the program, "
            f"or {longer}."
        )
    if eqns is not None:
        return (
            f"The limit already grew with the program ({eqns:,} eqns). Try a part of it (fewer "
            f"layers, fewer loop iterations, a smaller batch), or {longer}."
        )
    return (
        "If the program is meant to finish, try a smaller one or a part of it, or "
        f"{longer}. If it loops without end (`while True:`), give the loop an end."
    )


# Events that carry a program's text (StableHLO, HLO): a constant f captures is printed in it.
PROGRAM_TEXT_EVENTS = frozenset(
    {
        "module_lowered",
        "executable_compiled",
        "stablehlo_exported",
        "spmd_hlo_annotated",
        "hlo_pass_ran",
    }
)


def too_large_help(event_type: str) -> str:
    """``run_failed.explanation`` for an event line over the limit, by what the event holds."""
    if event_type in PROGRAM_TEXT_EVENTS:
        return (
            "The program's text (StableHLO or HLO, as JAX prints it) is larger than one event "
            "may be. A large array your function captures (defined outside f and used inside "
            "it) is baked into the program as a constant and printed whole, every element: "
            "pass it to f as an argument instead, or try the program smaller."
        )
    return (
        "One event this exhibit builds from your function (a jaxpr view, its values or steps) "
        "is larger than one event may be: the function has too many eqns or argument leaves "
        "for this exhibit (e.g. thousands of separate scalars). Try it smaller: stack many "
        "leaves into one array, or fewer layers/iterations unrolled in Python."
    )


def trace_growth_help(longer_than_s: float) -> str:
    """What to try after a trace was ended for growing without end
    (``settings.trace_kept_growing``), past the run's unscaled limit ``longer_than_s``."""
    return (
        "Real programs trace up to tens of thousands of eqns (the unrolled 20,000-eqn loop "
        f"of examples/real); this trace passed {TRACE_GROWTH_EQNS:,} and was still adding "
        f"eqns, one copy of the loop body per iteration, past the run's limit of "
        f"{longer_than_s:g} s. Is there an unbounded loop (`while True:`, a loop "
        "whose condition never turns false at trace time)? Stage the loop instead: "
        "`lax.while_loop`, `lax.fori_loop` or `lax.scan` keep one copy of its body. If the "
        "program really is this large, a longer limit (`jaxscope run EXHIBIT FILE --timeout "
        "S`, or `jaxscope serve --timeout S`) lets its trace grow until then."
    )


def classify_death(
    returncode: int | None, stderr_text: str, *, limits: Limits, cpu_s: float | None = None
) -> tuple[ErrorKind, str]:
    """(kind, message) for a worker that died during a job without a terminal event.

    SIGXCPU (the ``RLIMIT_CPU`` soft limit: ``cpu_s``, the run's own CPU limit after its
    exhibit's budget and its program's size, default ``limits.cpu_s``) → ``timeout``; memory
    markers on stderr (MemoryError, std::bad_alloc then SIGABRT, RESOURCE_EXHAUSTED, failed
    mmap) → ``memory``; anything else (``os._exit``, SIGSEGV, ...) → ``worker_crashed`` with
    the exit code or signal name.
    """
    if returncode == -signal.SIGXCPU:
        limit = limits.cpu_s if cpu_s is None else cpu_s
        return "timeout", f"the run exceeded its CPU-time limit of {limit:.3g} s"
    if any(m in stderr_text for m in MEMORY_MARKERS):
        return "memory", (
            "the worker ran out of memory (address-space limit "
            f"{limits.address_space_bytes / 2**30:g} GiB)"
            + _cause_line(stderr_text, lambda ln: any(m in ln for m in MEMORY_MARKERS))
        )
    if returncode is None:
        status = "died (unknown exit status)"
    elif returncode < 0:
        status = f"was killed by {_signal_name(-returncode)}"
        if -returncode in _TIMER_SIGNALS:
            # break-it review: signal.alarm(1) in the snippet ended "killed by SIGALRM", no more
            status += (
                " (a timer the snippet set, `signal.alarm` or `signal.setitimer`, fired with no "
                "handler installed: that ends the process; remove the timer, or install a "
                "handler with `signal.signal`)"
            )
    else:
        status = f"exited with code {returncode}"
    where = _where(stuck_at(stderr_text))
    return "worker_crashed", f"the worker process {status}{where}" + _cause_line(
        stderr_text, lambda ln: _FAILURE_WORDS.search(ln) is not None
    )


_FAULT_FRAME = re.compile(r'File "' + re.escape(SNIPPET_FILENAME) + r'", line (\d+) in (\S+)')


# The first line of a faulthandler dump of the thread that took the signal (all threads
# dumped) or that called ``os._exit`` (the runner's ``_exit_naming_line``: that thread only).
_DUMP_STARTS = ("Current thread ", "Stack (most recent call first)")


def stuck_at(stderr_text: str) -> SourceLoc | None:
    """The snippet line a worker was running, from the last ``faulthandler`` stack dump in its
    stderr (the runner dumps on SIGUSR1 and SIGXCPU, and when user code calls ``os._exit``): the
    innermost snippet frame of the thread that took the signal ("Current thread") or exited,
    else of any thread; None without one."""
    lines = stderr_text.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith(_DUMP_STARTS)]
    blocks: list[list[str]] = []
    if starts:
        block: list[str] = []
        for ln in lines[starts[-1] + 1 :]:
            if not ln.startswith("  "):
                break
            block.append(ln)
        blocks.append(block)
    blocks.append(lines)
    for block in blocks:
        for ln in block:
            if m := _FAULT_FRAME.search(ln):
                return SourceLoc(line=int(m.group(1)), function=m.group(2))
    return None


def _where(loc: SourceLoc | None) -> str:
    return f" (it was running line {loc.line}, in {loc.function})" if loc else ""


# Lines of a faulthandler dump, and ordinary log lines (absl's I/W/D lines, Python logging's
# and JAX's "LEVEL:" prefix): never a worker's cause of death.
_NOT_A_CAUSE = re.compile(
    r'^(Current thread |Thread 0x|Stack \(most recent call first\)|\s+File "|\s*<no Python frame>)'
    r"|^[IWD]\d{4} \d\d:\d\d:\d\d"
    r"|^(DEBUG|INFO|WARNING)[:\s]"
)
# What a line that says why a process died contains: an exception (``SomethingError: ...``), a
# fatal error (Python's "Fatal Python error", absl's FATAL "Check failed"), an abort, a signal.
_FAILURE_WORDS = re.compile(
    r"\w*(Error|Exception)\b|[Ff]atal|FATAL|Check failed|terminate called|[Aa]bort"
    r"|Segmentation fault|[Kk]illed"
)


def _cause_line(text: str, is_cause: Callable[[str], bool]) -> str:
    """``": <line>"`` for the last line of a dead worker's stderr that can say why it died
    (``is_cause``), skipping stack dumps and ordinary log lines (JAX logs to stderr, e.g.
    "Writing jit_f to persistent compilation cache ..."); ``""`` when none does."""
    for ln in reversed(text.strip().splitlines()):
        if ln.strip() and not _NOT_A_CAUSE.match(ln) and is_cause(ln):
            return f": {ln.strip()[:300]}"
    return ""


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return f": {lines[-1].strip()[:300]}" if lines else ""


_TYPE_IN_LINE = re.compile(rb'"type"\s*:\s*"([a-z_]{1,40})"')


def _event_type(head: bytes) -> str:
    """The ``type`` named in the first bytes of an event line, or ``"unknown"``."""
    found = _TYPE_IN_LINE.search(head)
    return found.group(1).decode() if found else "unknown"


class WorkerProcess:
    """One spawned, warm worker. Use :meth:`spawn`; then :meth:`run` one job at a time."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process | ForkedProcess,
        limits: Limits,
        *,
        workdir: str | None = None,
        uid: UidLease | None = None,
        kind: WorkerKind = "jax",
    ) -> None:
        self.proc = proc
        # Which interpreter it runs (sandbox/kinds.py); with ``limits``, the pool it came from.
        self.kind: WorkerKind = kind
        # Without namespaces only: the host directory that is the worker's cwd (removed when it
        # ends). In namespaces the worker's files live on its own tmpfs and vanish with it.
        self.workdir = workdir
        self.limits = limits
        # The uid the worker runs as (root-started workers only), held until its processes
        # are gone, so that it is never handed to another worker while they could exist.
        self.uid = uid
        self.info: dict[str, object] = {}
        self.runs = 0
        # The tags of this worker's earlier jobs: an event carrying one was written by an earlier
        # job still running; an event carrying none of them was forged inside the worker.
        self.past_tags: set[str] = set()
        # The pid of the worker's Python process as this (the supervisor's) pid namespace sees
        # it: in namespaces ``proc`` is bwrap, and the worker its grandchild.
        self.worker_pid = proc.pid
        # The last STDERR_TAIL_BYTES of stderr (a user thread may write gigabytes to fd 2).
        self._stderr_tail = bytearray()
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        self._killed = False
        self._cleaning: asyncio.Future[None] | None = None
        # Reads stdout between jobs: anything the worker writes then gets it killed.
        self._idle_watch: asyncio.Task[None] | None = None
        # Why the worker was killed between jobs (logged; the next run gets a fresh worker).
        self.idle_fault: str | None = None
        self._on_gone: list[Callable[[], None]] = []
        # Details on demand: after a finished run that streamed summaries, the worker is kept
        # (not killed) to answer DetailRequests: the seq and type of each summary, by detail_id.
        self.detail_seqs: dict[str, tuple[int, str]] = {}
        self.details_served = 0
        # The worker's CPU seconds when its run ended, once it is kept for details.
        self._details_cpu_base: float | None = None

    @property
    def pid(self) -> int:
        """The pid of the process the supervisor started (bwrap, in namespaces)."""
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None and not self._killed

    def add_gone_callback(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (once) when the worker is killed or found dead (the pool's cap)."""
        self._on_gone.append(callback)

    def _gone(self) -> None:
        callbacks, self._on_gone = self._on_gone, []
        for callback in callbacks:
            callback()

    @classmethod
    async def spawn(cls, limits: Limits, kind: WorkerKind = "jax") -> WorkerProcess:
        """Start a worker of ``kind`` (``sandbox/kinds.py``: its interpreter) and wait for its
        ready handshake. With ``limits.namespaces`` the worker runs inside bubblewrap
        (:mod:`jaxscope.sandbox.namespaces`); without, in a fresh host temp directory. As root
        it runs as a uid leased for its life. Raises :class:`WorkerStartError` (also when
        bubblewrap is missing, or the kind's interpreter is not installed)."""
        problem = kind_problem(kind)
        if problem is not None:
            raise WorkerStartError(problem)
        python = python_of(kind)
        command = [
            *runner_command(kind),
            "--limits",
            json.dumps(asdict(limits)),
            "--kind",
            kind,
        ]
        extra: tuple[str, ...] = ()
        if kind == "tpu_compile":
            extra = (os.path.realpath(tpu_site()),)
        elif kind not in ("jax", "accelerator"):
            extra = venv_paths(python)
        lease: UidLease | None = None
        workdir: str | None = None
        try:
            if os.geteuid() == 0:
                lease = await asyncio.to_thread(lease_uid)
            if limits.namespaces:
                uid = lease.uid if lease is not None else None
                try:
                    argv = bwrap_argv(
                        command, uid=uid, tmp_bytes=limits.tmp_bytes, extra_paths=extra
                    )
                except SandboxUnavailable as exc:
                    raise WorkerStartError(str(exc)) from exc
                env = worker_env(kind=kind)
            else:
                workdir = await asyncio.to_thread(tempfile.mkdtemp, prefix="jaxscope-worker-")
                argv = [*command, "--parent-pid", str(os.getpid())]
                if lease is not None:
                    argv += ["--uid", str(lease.uid)]
                env = worker_env(home=workdir, kind=kind)
            if limits.namespaces:
                become_subreaper()
            starting: Coroutine[Any, Any, asyncio.subprocess.Process | ForkedProcess]
            if zygote_problem(kind, limits) is None:
                # A fork of the kind's warm template (design 0053): ~0.1 CPU-s instead of ~1.6
                # (JAX) or ~7 (torch).
                starting = start_forked(
                    limits,
                    env,
                    lease.uid if lease is not None else None,
                    MAX_EVENT_LINE_BYTES,
                    kind,
                )
            else:
                starting = asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=workdir or "/",
                    env=env,
                    start_new_session=True,
                    limit=MAX_EVENT_LINE_BYTES,
                )
            creating: asyncio.Future[asyncio.subprocess.Process | ForkedProcess]
            creating = asyncio.ensure_future(starting)
            try:
                proc = await asyncio.shield(creating)
            except asyncio.CancelledError:
                # Cancelled mid-start (the pool is closing): finish starting, so that the
                # process can be killed and cleaned up like any other, then go on cancelling.
                orphan = cls(await creating, limits, workdir=workdir, uid=lease)
                lease = workdir = None
                orphan.kill()
                await orphan.wait_closed()
                raise
        except TemplateError as exc:
            # A fork whose answer did not come may still have started the worker: end every
            # process of its uid before the uid is given back.
            if lease is not None and await asyncio.to_thread(kill_uid, lease.uid):
                lease.release()
            raise WorkerStartError(str(exc)) from exc
        except BaseException:
            if lease is not None:
                lease.release()
            if workdir is not None:
                await asyncio.to_thread(shutil.rmtree, workdir, True)
            raise
        worker = cls(proc, limits, workdir=workdir, uid=lease, kind=kind)
        started = time.monotonic()
        try:
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT_S)
            info = json.loads(line) if line else None
            if not isinstance(info, dict) or info.get("ready") is not True:
                raise ValueError(f"bad handshake {line[:200]!r}")
        except (TimeoutError, ValueError) as exc:
            worker.kill()
            await worker.wait_closed()
            raise WorkerStartError(
                f"the sandbox worker failed to start ({exc})" + _last_line(worker.stderr_text())
            ) from exc
        except BaseException:
            # Cancelled while warming (the pool is closing): do not leave the process behind.
            worker.kill()
            await asyncio.shield(worker.wait_closed())
            raise
        worker.info = info
        if limits.namespaces:
            found = await asyncio.to_thread(python_in_sandbox, proc.pid)
            if found is not None:
                worker.worker_pid = found
        worker._watch_idle()
        log.info("worker %d ready in %.2f s", proc.pid, time.monotonic() - started)
        return worker

    async def _drain_stderr(self) -> None:
        # Bounded chunks, never whole lines: a single "line" may be gigabytes long.
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(STDERR_CHUNK_BYTES):
            self._stderr_tail += chunk
            if len(self._stderr_tail) > STDERR_TAIL_BYTES:
                del self._stderr_tail[: len(self._stderr_tail) - STDERR_TAIL_BYTES]
            if log.isEnabledFor(logging.DEBUG):
                log.debug("worker %d stderr: %s", self.proc.pid, chunk[:500])

    def stderr_text(self) -> str:
        """The kept tail of the worker's stderr (at most :data:`STDERR_TAIL_BYTES` bytes, decoded
        with replacement; its first line may be cut)."""
        return self._stderr_tail.decode(errors="replace")

    def stderr_kept_bytes(self) -> int:
        """How many bytes of stderr the supervisor holds for this worker (≤ the tail size)."""
        return len(self._stderr_tail)

    def _watch_idle(self) -> None:
        """Between jobs, any output on the event pipe is a protocol violation (a forged terminal
        event followed by the real ones, a user thread still printing), and so is computing
        (more than :data:`IDLE_CPU_BUDGET_S` of CPU, read from ``/proc``): kill the worker. EOF
        (the worker exited after its job) only marks it dead."""
        assert self.proc.stdout is not None
        stdout = self.proc.stdout

        async def watch_output() -> None:
            try:
                line = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                line = b"(an over-long line)"
            if line:
                self.idle_fault = f"wrote between jobs: {_event_type(line[:200])} event"
                log.warning("worker %d %s; killed", self.proc.pid, self.idle_fault)
                self.kill()  # here, not after: cancelling the watch must not save the worker
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.proc.wait(), 5.0)

        async def watch_cpu() -> None:
            # A worker kept for details counts its CPU from its run's end, across every watch
            # and answer (a detail request must not restart the count).
            start = self._details_cpu_base
            budget = DETAILS_CPU_BUDGET_S
            if start is None:
                start, budget = process_cpu_s(self.worker_pid), IDLE_CPU_BUDGET_S
            if start is None:
                return
            while True:
                await asyncio.sleep(IDLE_POLL_S)
                now = process_cpu_s(self.worker_pid)
                if now is None:
                    return
                if now - start > budget:
                    self.idle_fault = f"computed for {now - start:.1f} s of CPU between jobs"
                    log.warning("worker %d %s; killed", self.proc.pid, self.idle_fault)
                    self.kill()  # here, not after: cancelling the watch must not save it
                    return

        async def watch() -> None:
            tasks = [asyncio.ensure_future(watch_output()), asyncio.ensure_future(watch_cpu())]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
                # Cancelling a pending readline leaves the stream's buffer intact.
                await asyncio.gather(*tasks, return_exceptions=True)
            self.kill()

        self._idle_watch = asyncio.ensure_future(watch())

    async def _stop_idle_watch(self) -> None:
        watch, self._idle_watch = self._idle_watch, None
        if watch is not None and not watch.done():
            # Cancelling a pending readline leaves the stream's buffer intact.
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch

    async def _stop(
        self,
        cancelled: bool,
        wall: float,
        scaled_for: int | None = None,
        loaded_s: float = 0.0,
        loading: bool = False,
        waited_s: float = 0.0,
    ) -> RunFailed:
        """Kill the worker mid-run: the ``cancelled`` or ``timeout`` failure (the latter naming
        the snippet line it was running, the program size its limit was scaled for, and the
        seconds of its load stage that did not count). Its ``stage`` is filled in by the
        caller."""
        if cancelled:
            self.kill()
            return RunFailed(kind="cancelled", message="the run was cancelled")
        loc = await self._ask_where()
        self.kill()
        limit = (
            f"{wall:g} s"
            if scaled_for is None
            else (f"{wall:.0f} s (scaled for a program of about {scaled_for:,} eqns)")
        )
        if loaded_s > 0:
            # The load stage (the module body: imports, model building) has its own limit.
            limit += f", counted after its load stage (which took {loaded_s:.1f} s on its own)"
        if loading:
            limit += " (the load stage's own)"
        if waited_s > 0:
            # settings.wait_credit: the machine's load was not charged to the run
            limit += f", and {waited_s:.1f} s more while the busy machine kept it waiting for a CPU"
        failed = RunFailed(
            kind="timeout",
            message=f"the run exceeded its wall-clock limit of {limit}" + _where(loc),
        )
        failed.source = loc
        return failed

    async def _stop_growing_trace(self, streamed: int, trace_s: float) -> RunFailed:
        """Kill the worker whose trace kept growing (``settings.trace_kept_growing``): a
        ``timeout`` at stage trace, naming the eqns it streamed, in how long, and the line it
        was still running. Its ``stage`` and ``explanation`` are filled in by the caller."""
        loc = await self._ask_where()
        self.kill()
        still = f", still at line {loc.line}, in {loc.function}" if loc else ""
        failed = RunFailed(
            kind="timeout",
            message=(
                f"the trace kept growing ({streamed:,} eqns in {trace_s:.0f} s{still}): is "
                "there an unbounded loop?"
            ),
        )
        failed.source = loc
        return failed

    async def _ask_where(self) -> SourceLoc | None:
        """Ask a running worker for its Python stacks (SIGUSR1 -> faulthandler dump on stderr)
        and read the snippet line it is on; None when it does not answer within 0.3 s."""
        if not self.alive:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.worker_pid, signal.SIGUSR1)
        for _ in range(6):
            await asyncio.sleep(0.05)
            if (loc := stuck_at(self.stderr_text())) is not None:
                return loc
        return None

    def exit_status(self) -> int | None:
        """The worker's exit status as ``subprocess`` reports it (negative: killed by that
        signal). In namespaces the process is bwrap, which exits with 128 + the signal number
        when the worker was killed by a signal: that is turned back into ``-signal``."""
        code = self.proc.returncode
        if self.limits.namespaces and code is not None and 128 < code < 128 + signal.NSIG:
            return -(code - 128)
        return code

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (idempotent)."""
        self._killed = True
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._gone()

    async def wait_closed(self, timeout: float = 5.0) -> int | None:
        """Wait for the process to exit and its stderr to drain, then for the clean-up off the
        event loop (:meth:`_clean_up`, started once; every caller waits for it)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), timeout)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 2.0)
        if self._idle_watch is not None and not self._idle_watch.done():
            self._idle_watch.cancel()
        if self._cleaning is None:
            # In a thread: removing 300 000 files or waiting for a namespace to empty must never
            # stall the server's event loop (every other session's runs).
            self._cleaning = asyncio.ensure_future(asyncio.to_thread(self._clean_up))
        await asyncio.shield(self._cleaning)
        self._gone()
        return self.proc.returncode

    def _clean_up(self) -> None:
        """Blocking: remove the host working directory (without namespaces), kill whatever still
        runs under the worker's uid (without namespaces a ``setsid`` child escapes ``killpg``; in
        namespaces the kernel empties the pid namespace), then release the uid; a uid whose
        processes would not die stays leased for good."""
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self.limits.namespaces:
            reap_stray_sandboxes()
        lease = self.uid
        if lease is None:
            return
        if kill_uid(lease.uid):
            lease.release()
        else:
            log.error("uid %d still has processes after its worker ended; not reused", lease.uid)

    async def close(self) -> None:
        """Kill the worker and clean up (no state outlives its session)."""
        self.kill()
        await self.wait_closed()

    async def run(
        self,
        request: RunRequest,
        emit: Emit,
        *,
        cancel: asyncio.Event,
        wall_s: float | None = None,
    ) -> RunFinished | RunFailed:
        """Run one job and forward its events through ``emit`` (``seq`` 0, 1, 2, ...; ``run_id``
        of ``request``); return the terminal event, which is always the last one emitted.

        The run ends with ``run_failed`` ``timeout`` after ``wall_s`` seconds (default
        ``limits.wall_s``) times the exhibit's ``budget`` (``exhibits.registry``; the CPU limit
        is scaled the same way), ``cancelled`` once ``cancel`` is set, ``invalid_event`` on a line
        that is not a protocol event (or over :data:`MAX_EVENT_LINE_BYTES`, or tagged for
        another job), or the kind from :func:`classify_death` when the worker dies; in all those
        cases the worker is killed and must not be reused. Raises :class:`WorkerGone` (nothing
        emitted) when the worker was already dead, or still writing an earlier job's events,
        before this job produced its first event.
        """
        limits = self.limits
        budget = run_budget(request.exhibit)
        base_wall = limits.wall_s if wall_s is None else wall_s
        wall = base_wall * budget
        scaled_for: int | None = None  # the size the wall clock was scaled for
        size = 0  # the run's size so far: eqns of its largest jaxpr, or events sent
        unscaled = base_wall * budget
        loaded = loaded_cpu = 0.0  # seconds of the load stage that do not count (design 0046)
        loading = False  # in the load stage, under its own limit (settings.load_limit)
        trace_started: float | None = None  # when the current trace stage began
        trace_streamed = 0  # eqns the current trace stage streamed
        # Seconds spent waiting for the session's consumer to take an event (a page that reads
        # slowly): the worker is blocked on its pipe meanwhile, so they are not its trace's.
        forward_wait_s = 0.0
        await self._stop_idle_watch()
        if not self.alive:
            raise WorkerGone(f"worker {self.pid} is gone ({self.idle_fault or 'exited'})")
        self.runs += 1
        # The worker sees a job-specific, unguessable run_id; its events must carry it back (a
        # line forged by user code for another or an earlier job is caught by it).
        tag = f"job-{self.runs}-{secrets.token_hex(8)}"
        self.past_tags.add(tag)
        seq = 0
        stage: Stage | None = None  # the last stage_started forwarded

        async def forward(event: EventModel) -> None:
            nonlocal seq, stage
            if isinstance(event, StageStarted):
                stage = event.stage
            event.seq = seq
            event.run_id = request.run_id
            seq += 1
            await emit(event)

        def failed(kind: ErrorKind, message: str) -> RunFailed:
            return RunFailed(
                kind=kind, message=message, stage=stage if kind in KILLED_KINDS else None
            )

        self._stderr_tail.clear()
        job_request = request.model_copy(update={"run_id": tag})
        job = json.dumps(
            {
                "job": self.runs,
                "request": job_request.model_dump(mode="json"),
                "cpu_s": limits.cpu_s * budget,
            }
        )
        terminal: RunFinished | RunFailed
        run_bytes = 0
        detail_ids = 0
        assert self.proc.stdin is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        loop = asyncio.get_running_loop()
        started = deadline = loop.time()
        deadline += wall
        # The time a busy machine made the worker wait for a CPU moves the deadline
        # (settings.wait_credit): counted from here, then again from the end of the load stage
        # (whose time does not count at all).
        delay_base = run_delay_s(self.worker_pid)
        waited = 0.0  # seconds credited so far
        cancel_wait = asyncio.ensure_future(cancel.wait())
        read: asyncio.Future[bytes] | None = None
        try:
            try:
                self.proc.stdin.write(job.encode() + b"\n")
                await self.proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the worker is dead: the read below sees EOF and classifies the death
            while True:
                if read is None or read.done():  # a read still pending is waited on again
                    read = asyncio.ensure_future(stdout.readuntil(b"\n"))
                assert read is not None
                waiting: set[asyncio.Future[Any]] = {read, cancel_wait}
                done, _ = await asyncio.wait(
                    waiting,
                    timeout=max(0.0, deadline - loop.time()),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                # The deadline holds however fast lines come (a print loop keeps ``read``
                # ready every time, so ``asyncio.wait`` alone would never time out).
                expired = cancel_wait not in done and (read not in done or loop.time() >= deadline)
                if expired and delay_base is not None:
                    now_delay = run_delay_s(self.worker_pid)
                    credit = (
                        0.0
                        if now_delay is None
                        else wait_credit(now_delay - delay_base, waited, wall)
                    )
                    if credit > 0:
                        waited += credit
                        deadline += credit
                        if read not in done:
                            continue
                        expired = False  # the line that came is read below
                if expired or cancel_wait in done:
                    terminal = await self._stop(
                        cancel_wait in done,
                        load_limit(unscaled) if loading else wall,
                        scaled_for,
                        loaded,
                        loading,
                        waited,
                    )
                    terminal.stage = stage if terminal.kind in KILLED_KINDS else None
                    terminal.explanation = limit_help(terminal, scaled_for)
                    break
                try:
                    line = read.result()
                except asyncio.LimitOverrunError:
                    # The line is still in the buffer: read its head to name the event type.
                    head = await stdout.read(200)
                    self.kill()
                    kind = _event_type(head)
                    terminal = failed(
                        "invalid_event",
                        f"the worker wrote a {kind} event line over {MAX_EVENT_LINE_BYTES:,} bytes",
                    )
                    terminal.stage = stage
                    terminal.explanation = too_large_help(kind)
                    break
                except asyncio.IncompleteReadError as eof:
                    line = eof.partial
                    if not line and seq == 0:
                        # Dead before this job's first event (e.g. it exited after its last
                        # job, as a worker with leftover threads does): not this run's fault.
                        await self.wait_closed()
                        self._killed = True
                        raise WorkerGone(
                            f"worker {self.pid} exited before the job started "
                            f"(status {self.proc.returncode})"
                        ) from None
                    if not line:
                        await self.wait_closed()
                        kind, message = classify_death(
                            self.exit_status(),
                            self.stderr_text(),
                            limits=limits,
                            cpu_s=scaled_limit(limits.cpu_s, budget, size, limits) + loaded_cpu,
                        )
                        self._killed = True
                        terminal = failed(kind, message)
                        if kind == "timeout":
                            terminal.source = stuck_at(self.stderr_text())
                            terminal.message += _where(terminal.source)
                        elif kind == "worker_crashed":  # its message names the line already
                            terminal.source = stuck_at(self.stderr_text())
                        elif kind == "memory":
                            terminal.explanation, terminal.fix = DEATH_BY_MEMORY_HELP
                        break
                try:
                    if len(line) > VALIDATE_OFF_LOOP_BYTES:
                        # A big line takes ~20 ms per MiB to validate: off the event loop, so
                        # that one run's (possibly forged) big events cannot stall the others.
                        event = await asyncio.to_thread(EVENT_ADAPTER.validate_json, line)
                    else:
                        event = EVENT_ADAPTER.validate_json(line)
                except ValidationError as exc:
                    self.kill()
                    first = exc.errors()[0]
                    terminal = failed(
                        "invalid_event",
                        "the worker sent a line that is not a protocol event "
                        f"({first['type']}: {first['msg']}): {line[:120]!r}",
                    )
                    break
                run_bytes += len(line)
                if run_bytes > MAX_RUN_BYTES:
                    if stage == "trace" and trace_started is not None and trace_streamed > 0:
                        # A trace whose eqns grow as it goes (a list stacked anew each pass)
                        # reaches the byte limit before the eqn count of the endless-trace
                        # rule: it is the same unbounded trace, told the same way.
                        terminal = await self._stop_growing_trace(
                            trace_streamed, loop.time() - trace_started
                        )
                        terminal.stage = "trace"
                        terminal.explanation = trace_growth_help(unscaled)
                        break
                    loc = await self._ask_where()
                    self.kill()
                    terminal = failed(
                        "invalid_event",
                        f"the worker sent more than {MAX_RUN_BYTES:,} bytes of events in one "
                        "run (printed output is capped at 1 MiB; this is not ordinary output)"
                        + _where(loc),
                    )
                    terminal.stage = stage
                    terminal.source = loc
                    break
                if event.run_id != tag:
                    self.kill()
                    if seq == 0:
                        # An earlier job is still writing (it forged its terminal event).
                        raise WorkerGone(
                            f"worker {self.pid} wrote a {event.type} event of an earlier job"
                        )
                    terminal = failed(
                        "invalid_event",
                        f"the worker sent a {event.type} event of an earlier job "
                        "(that job was still running)"
                        if event.run_id in self.past_tags
                        else f"the worker sent a {event.type} event without this run's tag: "
                        "it was written to the worker's event pipe from inside the run (by the "
                        "snippet?), not by jaxscope; the run is ended and its worker stopped",
                    )
                    break
                if event.detail_of is not None:
                    # A worker that will not stay to answer sends the whole events before its
                    # terminal one: each replaces a summary it streamed (same seq and type).
                    known = self.detail_seqs.pop(event.detail_of, None)
                    if known is None or known[1] != event.type:
                        self.kill()
                        terminal = failed(
                            "invalid_event",
                            f"the worker sent the whole event of a summary it never streamed "
                            f"({event.type})",
                        )
                        break
                    event.seq, event.run_id = known[0], request.run_id
                    await emit(event)
                    continue
                if isinstance(event, (RunFinished, RunFailed)):
                    assert is_terminal(event)
                    terminal = event
                    break
                # The wall clock grows with the size of what the run shows: the eqns of the
                # largest jaxpr it reported (BudgetScaled), or the events it sent, whichever is
                # more (a trace streams one event per eqn before its jaxpr is complete). By our
                # own formula: a forged event gains at most ``limits.ceiling_s``.
                # A trace that streams its eqns counts them only up to TRACE_GROWTH_EQNS.
                streamed = min(seq, TRACE_GROWTH_EQNS) if stage == "trace" else seq
                grown = isinstance(event, BudgetScaled) and event.eqns > size
                if grown or seq % SIZE_CHECK_EVERY == 0:
                    size = max(size, streamed, event.eqns if isinstance(event, BudgetScaled) else 0)
                    scaled = scaled_limit(base_wall, budget, size, limits)
                    if scaled > wall:
                        deadline += scaled - wall
                        wall = scaled
                        scaled_for = size
                now = loop.time()
                if isinstance(event, StageStarted) and event.stage == "load" and stage is None:
                    # The load stage has a limit of its own (settings.load_limit).
                    loading = True
                    deadline = started + max(wall, load_limit(unscaled)) + waited
                elif loading and not (isinstance(event, StdoutPrinted) and event.stage == "load"):
                    # The load stage ended: the next event is its credit (a load of a second
                    # or more; the worker's word, at most the time the run has taken and the
                    # load limit) or the probe's first. Its time does not count.
                    loading = False
                    if isinstance(event, BudgetScaled) and event.load_s is not None:
                        loaded = load_credit(min(event.load_s, now - started), unscaled)
                        loaded_cpu = load_credit(event.load_cpu_s or 0.0, limits.cpu_s * budget)
                    deadline = started + loaded + wall
                    # the load stage's waits went with its time
                    delay_base, waited = run_delay_s(self.worker_pid), 0.0
                if isinstance(event, BudgetScaled):
                    event.wall_s = round(wall + loaded, 3)
                # A trace that keeps growing past what a finite program traces, and past the
                # unscaled limit, is ended now rather than given time up to the ceiling.
                if isinstance(event, StageStarted) and event.stage == "trace":
                    trace_started, trace_streamed = now, 0
                elif (
                    event.type == "eqn_recorded" and stage == "trace" and trace_started is not None
                ):
                    trace_streamed += 1
                    traced_s = now - started - loaded - forward_wait_s
                    if trace_kept_growing(trace_streamed, traced_s, unscaled):
                        terminal = await self._stop_growing_trace(
                            trace_streamed, now - trace_started
                        )
                        terminal.stage = "trace"
                        terminal.explanation = trace_growth_help(unscaled)
                        break
                ranges = range_ids(event)  # eqn and list ranges (design 0045)
                detail_ids += len(ranges) + (event.detail_id is not None)
                if detail_ids > MAX_RUN_DETAIL_IDS:
                    self.kill()
                    terminal = failed(
                        "invalid_event",
                        f"the worker streamed more than {MAX_RUN_DETAIL_IDS:,} detail ids in one "
                        "run (summaries and ranges of its events; this is not ordinary output)",
                    )
                    break
                if event.detail_id is not None:
                    self.detail_seqs[event.detail_id] = (seq, event.type)
                for range_id, answer in ranges:
                    self.detail_seqs[range_id] = (seq, answer)
                # Forwarding waits for the session's consumer (a slow page); the deadline and a
                # cancel still end the run while it waits, and the event is sent all the same.
                sending = asyncio.ensure_future(forward(event))
                waited_from = loop.time()
                done, _ = await asyncio.wait(
                    {sending, cancel_wait},
                    timeout=max(0.0, deadline - loop.time()),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                forward_wait_s += loop.time() - waited_from
                if sending not in done:
                    terminal = await self._stop(
                        cancel_wait in done,
                        load_limit(unscaled) if loading else wall,
                        scaled_for,
                        loaded,
                        loading,
                        waited,
                    )
                    terminal.stage = stage if terminal.kind in KILLED_KINDS else None
                    terminal.explanation = limit_help(terminal, scaled_for)
                    await sending
                    break
                sending.result()
        finally:
            cancel_wait.cancel()
            if read is not None and not read.done():
                read.cancel()
        # One job per worker: the next run, of this session or any other, starts in a fresh
        # process and namespaces, so nothing this run changed (modules, builtins, sys, signals,
        # environment, cwd, JAX's config, files in /tmp, processes it left) can reach it. A
        # finished run that streamed summaries keeps its worker for its details only (the
        # session kills it at its next run, when it closes, or when the pool needs the slot);
        # between answers it is watched like any idle worker.
        if isinstance(terminal, RunFinished) and self.detail_seqs and self.alive:
            self._details_cpu_base = process_cpu_s(self.worker_pid)
            self._watch_idle()
        else:
            self.detail_seqs.clear()
            self.kill()
        await forward(terminal)
        return terminal

    @property
    def keeps_details(self) -> bool:
        """Whether the worker is alive and holds the details of the run it finished."""
        return self.alive and bool(self.detail_seqs)

    async def detail(self, run_id: str, detail_id: str, emit: Emit) -> None:
        """Answer a DetailRequest of the run this worker finished (``run_id``: the page's): the
        whole event behind the summary ``detail_id``, sent through ``emit`` with the summary's
        ``seq`` and ``detail_of``; else ``detail_failed``. The answer is checked as strictly as
        a run's events (its own unguessable tag, the summary's type, the line limit); a worker
        that answers wrongly or not within the wall-clock limit is killed (its details gone)."""
        known = self.detail_seqs.get(detail_id)
        if known is None or not self.alive:
            gone = not self.alive
            await emit(
                DetailFailed(
                    run_id=run_id,
                    detail_id=detail_id[:64],
                    gone=gone,
                    message=DETAILS_GONE if gone else f"the run has no detail {detail_id[:64]!r}",
                )
            )
            return
        seq, event_type = known
        await self._stop_idle_watch()
        self.details_served += 1
        tag = f"detail-{self.details_served}-{secrets.token_hex(8)}"
        assert self.proc.stdin is not None and self.proc.stdout is not None
        problem: str | None = None
        event: EventModel | None = None
        try:
            self.proc.stdin.write(json.dumps({"detail": detail_id, "tag": tag}).encode() + b"\n")
            await self.proc.stdin.drain()
            line = await asyncio.wait_for(self.proc.stdout.readuntil(b"\n"), self.limits.wall_s)
            event = await asyncio.to_thread(EVENT_ADAPTER.validate_json, line)
        except (BrokenPipeError, ConnectionResetError, asyncio.IncompleteReadError):
            problem = DETAILS_GONE
        except TimeoutError:
            problem = f"the worker did not answer within {self.limits.wall_s:g} s"
        except asyncio.LimitOverrunError:
            problem = f"the detail is over {MAX_EVENT_LINE_BYTES:,} bytes"
        except ValidationError:
            problem = "the worker's answer is not a protocol event"
        if event is not None and problem is None:
            if event.run_id != tag or event.type != event_type or event.detail_of != detail_id:
                problem = "the worker's answer is not the detail asked for"
        used = process_cpu_s(self.worker_pid)
        base = self._details_cpu_base
        if problem is None and used is not None and base is not None:
            if used - base > DETAILS_CPU_BUDGET_S:
                problem = DETAILS_GONE
        if problem is not None or event is None:
            log.warning("worker %d: detail %s: %s; killed", self.proc.pid, detail_id, problem)
            self.kill()
            await emit(
                DetailFailed(
                    run_id=run_id,
                    detail_id=detail_id,
                    gone=problem == DETAILS_GONE,
                    message=f"{problem}",
                )
            )
            return
        event.seq, event.run_id = seq, run_id
        self._watch_idle()
        await emit(event)
