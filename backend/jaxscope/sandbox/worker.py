"""The supervisor's handle on one sandbox worker process: spawn, run one job, kill, classify.

A :class:`WorkerProcess` is spawned with ``asyncio.create_subprocess_exec`` (never forked from a
process holding JAX) in a new session (so the whole process group can be killed) with a temporary
working directory and ``--xla_force_host_platform_device_count=8`` added to ``XLA_FLAGS``.
:meth:`WorkerProcess.run` sends one job, re-validates every line the worker writes with
``EVENT_ADAPTER``, assigns ``seq``/``run_id``, enforces the wall-clock limit and cancellation,
and guarantees exactly one terminal event, synthesising it when the worker cannot (see
:func:`classify_death`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict

from pydantic import ValidationError

from jaxscope.protocol import (
    EVENT_ADAPTER,
    ErrorKind,
    EventModel,
    RunFailed,
    RunFinished,
    RunRequest,
    is_terminal,
)
from jaxscope.settings import Limits

log = logging.getLogger(__name__)

Emit = Callable[[EventModel], Awaitable[None]]

# Failures after which a worker is not reused (its state may be broken or it is already dead).
RECYCLE_KINDS: frozenset[ErrorKind] = frozenset(
    {"timeout", "memory", "worker_crashed", "cancelled", "invalid_event"}
)

# One event line may carry a whole optimized HLO module; anything longer is an invalid event.
MAX_EVENT_LINE_BYTES = 64 * 2**20
START_TIMEOUT_S = 120.0
DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count=8"

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


def worker_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: ``base`` (default ``os.environ``) with the 8-device flag added to
    ``XLA_FLAGS`` (existing flags kept) and ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless set.
    ``JAX_PLATFORMS`` is left alone, so a GPU stays the default backend."""
    env = dict(os.environ if base is None else base)
    flags = env.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        env["XLA_FLAGS"] = (flags + " " + DEVICE_COUNT_FLAG).strip()
    # On a GPU, XLA would otherwise preallocate 75% of device memory in every warm worker, so
    # a second worker could not start; allocate on demand instead (no effect on CPU).
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env["PYTHONUNBUFFERED"] = "1"
    # The worker must not write .pyc files next to the user's temp cwd or the repo.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def classify_death(
    returncode: int | None, stderr_text: str, *, limits: Limits
) -> tuple[ErrorKind, str]:
    """(kind, message) for a worker that died during a job without a terminal event.

    SIGXCPU (the ``RLIMIT_CPU`` soft limit) → ``timeout``; memory markers on stderr (MemoryError,
    std::bad_alloc then SIGABRT, RESOURCE_EXHAUSTED, failed mmap) → ``memory``; anything else
    (``os._exit``, SIGSEGV, ...) → ``worker_crashed`` with the exit code or signal name.
    """
    if returncode == -signal.SIGXCPU:
        return "timeout", f"the run exceeded its CPU-time limit of {limits.cpu_s:g} s"
    if any(m in stderr_text for m in MEMORY_MARKERS):
        return "memory", (
            "the worker ran out of memory (address-space limit "
            f"{limits.address_space_bytes / 2**30:g} GiB)" + _last_line(stderr_text)
        )
    if returncode is None:
        status = "unknown exit status"
    elif returncode < 0:
        status = f"killed by {_signal_name(-returncode)}"
    else:
        status = f"exit code {returncode}"
    return "worker_crashed", f"the worker process died ({status})" + _last_line(stderr_text)


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return f": {lines[-1].strip()[:300]}" if lines else ""


class WorkerProcess:
    """One spawned, warm worker. Use :meth:`spawn`; then :meth:`run` one job at a time."""

    def __init__(self, proc: asyncio.subprocess.Process, workdir: str, limits: Limits) -> None:
        self.proc = proc
        self.workdir = workdir
        self.limits = limits
        self.info: dict[str, object] = {}
        self.runs = 0
        self._stderr_lines: collections.deque[str] = collections.deque(maxlen=400)
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        self._killed = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None and not self._killed

    @classmethod
    async def spawn(cls, limits: Limits) -> WorkerProcess:
        """Start a worker and wait for its ready handshake. Raises :class:`WorkerStartError`."""
        workdir = tempfile.mkdtemp(prefix="jaxscope-worker-")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "jaxscope.sandbox.runner",
            "--limits",
            json.dumps(asdict(limits)),
            "--parent-pid",
            str(os.getpid()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=workdir,
            env=worker_env(),
            start_new_session=True,
            limit=MAX_EVENT_LINE_BYTES,
        )
        worker = cls(proc, workdir, limits)
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
        log.info("worker %d ready in %.2f s", proc.pid, time.monotonic() - started)
        return worker

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        while True:
            try:
                line = await self.proc.stderr.readline()
            except ValueError:  # a line longer than the limit: keep reading
                continue
            if not line:
                return
            text = line.decode(errors="replace")
            self._stderr_lines.append(text)
            log.debug("worker %d stderr: %s", self.proc.pid, text.rstrip())

    def stderr_text(self) -> str:
        return "".join(self._stderr_lines)

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (idempotent)."""
        self._killed = True
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    async def wait_closed(self, timeout: float = 5.0) -> int | None:
        """Wait for the process to exit and its stderr to drain; remove its working directory."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.wait(), timeout)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 2.0)
        shutil.rmtree(self.workdir, ignore_errors=True)
        return self.proc.returncode

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
        ``limits.wall_s``), ``cancelled`` once ``cancel`` is set, ``invalid_event`` on a line
        that is not a protocol event, or the kind from :func:`classify_death` when the worker
        dies; in all those cases the worker is killed and must not be reused.
        """
        limits = self.limits
        wall = limits.wall_s if wall_s is None else wall_s
        self.runs += 1
        seq = 0

        async def forward(event: EventModel) -> None:
            nonlocal seq
            event.seq = seq
            event.run_id = request.run_id
            seq += 1
            await emit(event)

        def failed(kind: ErrorKind, message: str) -> RunFailed:
            return RunFailed(kind=kind, message=message)

        self._stderr_lines.clear()
        job = json.dumps({"request": request.model_dump(mode="json"), "cpu_s": limits.cpu_s})
        terminal: RunFinished | RunFailed
        assert self.proc.stdin is not None and self.proc.stdout is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wall
        cancel_wait = asyncio.ensure_future(cancel.wait())
        read: asyncio.Future[bytes] | None = None
        try:
            try:
                self.proc.stdin.write(job.encode() + b"\n")
                await self.proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the worker is dead: the read below sees EOF and classifies the death
            while True:
                read = asyncio.ensure_future(self.proc.stdout.readline())
                done, _ = await asyncio.wait(
                    {read, cancel_wait},
                    timeout=max(0.0, deadline - loop.time()),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if read not in done:
                    self.kill()
                    if cancel_wait in done:
                        terminal = failed("cancelled", "the run was cancelled")
                    else:
                        terminal = failed(
                            "timeout", f"the run exceeded its wall-clock limit of {wall:g} s"
                        )
                    break
                try:
                    line = read.result()
                except (ValueError, asyncio.LimitOverrunError):
                    self.kill()
                    terminal = failed(
                        "invalid_event",
                        f"the worker wrote an event line over {MAX_EVENT_LINE_BYTES} bytes",
                    )
                    break
                if not line:
                    await self.wait_closed()
                    kind, message = classify_death(
                        self.proc.returncode, self.stderr_text(), limits=limits
                    )
                    self._killed = True
                    terminal = failed(kind, message)
                    break
                try:
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
                if isinstance(event, (RunFinished, RunFailed)):
                    assert is_terminal(event)
                    terminal = event
                    break
                await forward(event)
        finally:
            cancel_wait.cancel()
            if read is not None and not read.done():
                read.cancel()
        if isinstance(terminal, RunFailed) and terminal.kind in RECYCLE_KINDS:
            self.kill()
        await forward(terminal)
        return terminal
