"""The sandbox worker process: ``python -m jaxscope.sandbox.runner --limits JSON``.

Spawned by :mod:`jaxscope.sandbox.worker` (never forked). Start-up: keep fd 1 as the private
*event pipe* (``dup``) and point fd 1 at stderr (``dup2(2, 1)``) so stray C-level writes cannot
corrupt the event stream; keep fd 0 as the private *job pipe* and point fd 0 at /dev/null; apply
the rlimits; import JAX, initialise the backend, jit one tiny function; import every exhibit probe;
install the audit hook; write one handshake line ``{"ready": ...}``.

Then one job per line on the job pipe (``{"request": RunRequest, "cpu_s": float}``); for each,
NDJSON events on the event pipe ending in exactly one terminal event (``run_finished`` or
``run_failed``). ``sys.stdout`` becomes a writer that turns the user's prints into
``stdout_printed`` events attributed to the current stage.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from jaxscope.protocol import (
    EventModel,
    RunFailed,
    RunFinished,
    RunOptions,
    RunRequest,
    RunStarted,
    Stage,
    StageStarted,
    StdoutPrinted,
)
from jaxscope.sandbox.probe_api import Snippet
from jaxscope.settings import Limits

# The fds of the private pipes, set by ``main``; module-level so that a test snippet can find
# the event fd (``import __main__; __main__.EVENT_FD``) to fake a broken worker.
EVENT_FD = -1
JOB_FD = -1

# An exception message longer than this is cut (a str() of a huge array, say).
MAX_MESSAGE_CHARS = 20_000

_write_lock = threading.Lock()


def write_line(fd: int, data: bytes) -> None:
    """Write ``data`` fully to ``fd`` (``os.write`` may write less than asked on a pipe)."""
    with _write_lock:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]


def send_event(event: EventModel) -> None:
    write_line(EVENT_FD, event.model_dump_json().encode() + b"\n")


class RunContext:
    """The runner's :class:`~jaxscope.sandbox.probe_api.ProbeContext` for one job."""

    def __init__(self, request: RunRequest) -> None:
        self.run_id = request.run_id
        self.exhibit = request.exhibit
        self.options: RunOptions = request.options
        self.snippet: Snippet
        self.current_stage: Stage = "load"
        self.current_call: int | None = None
        # The innermost stage an exception escaped from (reported in run_failed.stage).
        self.error_stage: Stage | None = None

    def emit(self, event: EventModel) -> None:
        _STDOUT.flush()
        event.run_id = self.run_id
        send_event(event)

    @contextmanager
    def stage(self, stage: Stage, call_index: int | None = None) -> Iterator[None]:
        _STDOUT.flush()
        previous = (self.current_stage, self.current_call)
        self.current_stage, self.current_call = stage, call_index
        self.emit(StageStarted(stage=stage, call_index=call_index))
        try:
            yield
        except BaseException:
            if self.error_stage is None:
                self.error_stage = stage
            raise
        finally:
            _STDOUT.flush()
            self.current_stage, self.current_call = previous


class StdoutEvents(io.TextIOBase):
    """``sys.stdout`` of the worker: each completed line the user prints during a job becomes a
    ``stdout_printed`` event (stage and call index of the current :class:`RunContext`); outside
    a job, text goes to stderr. Thread-safe (``jax.debug.print`` prints from XLA's threads)."""

    def __init__(self) -> None:
        super().__init__()
        self.ctx: RunContext | None = None
        self._buf = ""
        self._lock = threading.RLock()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, s: str) -> int:
        with self._lock:
            if self.ctx is None:
                sys.stderr.write(s)
                return len(s)
            self._buf += s
            if "\n" in self._buf:
                head, _, self._buf = self._buf.rpartition("\n")
                self._send(head + "\n")
            return len(s)

    def flush(self) -> None:
        with self._lock:
            if self._buf and self.ctx is not None:
                text, self._buf = self._buf, ""
                self._send(text)

    def _send(self, text: str) -> None:
        ctx = self.ctx
        assert ctx is not None
        ev = StdoutPrinted(
            text=text, stage=ctx.current_stage, call_index=ctx.current_call, run_id=ctx.run_id
        )
        send_event(ev)


_STDOUT = StdoutEvents()


def _warm_up() -> dict[str, Any]:
    """Import JAX, initialise the default backend, compile one tiny function."""
    import jax
    import jax.numpy as jnp

    devices = jax.devices()
    jax.jit(lambda x: x * 2.0 + 1.0)(jnp.ones(3)).block_until_ready()
    return {
        "jax_version": jax.__version__,
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devices],
        "cpu_device_count": len(jax.devices("cpu")),
    }


def _import_probes() -> tuple[dict[str, ModuleType], dict[str, str]]:
    """Import ``exhibits.<id>.probe`` for every registry id; import errors are kept, not fatal
    (the run of such an exhibit fails with the import error)."""
    import importlib

    from exhibits.registry import EXHIBITS

    probes: dict[str, ModuleType] = {}
    errors: dict[str, str] = {}
    for exhibit_id in EXHIBITS:
        try:
            probes[exhibit_id] = importlib.import_module(f"exhibits.{exhibit_id}.probe")
        except Exception as exc:
            errors[exhibit_id] = f"{type(exc).__name__}: {exc}"
    return probes, errors


class ProbeMissing(Exception):
    """The exhibit's probe could not be imported in this worker."""


def run_job(
    request: RunRequest,
    cpu_s: float,
    info: dict[str, Any],
    probes: dict[str, Any],
    probe_errors: dict[str, str],
) -> None:
    """Run one job; emits events ending in exactly one terminal event. Never raises."""
    from jaxscope.sandbox import guard
    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import load_snippet

    started = time.perf_counter()
    guard.set_cpu_budget(cpu_s)
    # No jax.clear_caches() here (measured, see docs/design/0001-sandbox.md): every run executes
    # the snippet anew, so `f` is a new object and JAX traces, lowers and compiles it afresh
    # (probes empty the tracing caches they need with internals.cache.fresh_caches), while the
    # eager kernels of the snippet's module body (`jax.random.normal` for parameters...) stay
    # compiled for the session's next runs: clearing them cost 2.4-7 s per run of the conv-net
    # example on a 2-core box, against 0.2-0.4 s for the whole run with them kept.
    ctx = RunContext(request)
    _STDOUT.ctx = ctx
    try:
        ctx.emit(
            RunStarted(
                exhibit=request.exhibit,
                jax_version=info["jax_version"],
                backend=info["backend"],
                devices=info["devices"],
                cpu_device_count=info["cpu_device_count"],
            )
        )
        with ctx.stage("load"):
            ctx.snippet = load_snippet(request.code)
        probe = probes.get(request.exhibit)
        if probe is None:
            raise ProbeMissing(
                f"the probe of exhibit {request.exhibit!r} could not be imported: "
                + probe_errors.get(request.exhibit, "unknown exhibit")
            )
        ctx.current_stage = "trace"
        probe.run(ctx)
        _STDOUT.flush()
        ctx.emit(RunFinished(duration_ms=(time.perf_counter() - started) * 1e3))
    except BaseException as exc:  # the user's code may raise anything, SystemExit included
        try:
            _STDOUT.flush()
        except Exception:
            pass
        try:
            failed = classify(exc, ctx.error_stage or ctx.current_stage)
        except Exception as broken:  # e.g. a user exception whose __str__ raises
            failed = RunFailed(
                kind="user_exception",
                error_class=type(exc).__name__,
                message=f"(the exception could not be printed: {type(broken).__name__})",
                stage=ctx.error_stage or ctx.current_stage,
            )
        if len(failed.message) > MAX_MESSAGE_CHARS:
            failed.message = failed.message[:MAX_MESSAGE_CHARS] + "\n… (truncated)"
        # Break the reference cycle frame -> exception so the user's arrays can be freed.
        del exc
        failed.run_id = ctx.run_id
        send_event(failed)
    finally:
        _STDOUT.ctx = None
        ctx.__dict__.pop("snippet", None)
        gc.collect()


def _read_jobs(fd: int) -> Iterator[bytes]:
    with os.fdopen(fd, "rb", buffering=0) as raw, io.BufferedReader(raw) as jobs:
        yield from jobs


def main(argv: list[str] | None = None) -> int:
    global EVENT_FD, JOB_FD
    parser = argparse.ArgumentParser(prog="python -m jaxscope.sandbox.runner")
    parser.add_argument("--limits", default="{}", help="Limits as JSON (see jaxscope.settings)")
    parser.add_argument("--parent-pid", type=int, default=0, help="die when this process dies")
    ns = parser.parse_args(argv)
    limits = Limits(**json.loads(ns.limits))

    # Private pipes first, before anything can write to fd 1 or read fd 0.
    EVENT_FD = os.dup(1)
    os.dup2(2, 1)
    JOB_FD = os.dup(0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.set_inheritable(EVENT_FD, False)
    os.set_inheritable(JOB_FD, False)

    from jaxscope.sandbox import guard

    if ns.parent_pid:
        guard.die_with_parent(ns.parent_pid)
    guard.apply_startup_limits(limits)
    info = _warm_up()
    probes, probe_errors = _import_probes()
    # Move everything alive after warm-up (JAX, probes) out of the collector's reach: the
    # full collection after each job then scans only the job's objects (45 ms -> ~0 ms).
    gc.collect()
    gc.freeze()
    sys.stdin = io.StringIO("")
    sys.stdout = _STDOUT
    guard.install_audit_hook()
    ready = {"ready": True, **info, "probe_errors": probe_errors, "pid": os.getpid()}
    write_line(EVENT_FD, json.dumps(ready).encode() + b"\n")

    for line in _read_jobs(JOB_FD):
        if not line.strip():
            continue
        job = json.loads(line)
        request = RunRequest.model_validate(job["request"])
        run_job(request, float(job["cpu_s"]), info, probes, probe_errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
