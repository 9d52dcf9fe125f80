"""The in-process defences of a sandbox worker: resource limits and an audit hook.

``apply_startup_limits`` runs before JAX is imported (``RLIMIT_AS``, ``RLIMIT_NPROC``,
``RLIMIT_CORE=0``); ``set_cpu_budget`` runs before every job (``RLIMIT_CPU`` soft limit = CPU used
so far + the job's budget, so SIGXCPU ends a runaway job); ``install_audit_hook`` runs once the
worker is warm and refuses process creation, signals to other processes and network sockets with a
clear ``PermissionError``. These are defence in depth: the real boundary is the separate process
that the supervisor kills on any overrun (and, hosted, a container without network).
"""

from __future__ import annotations

import ctypes
import math
import os
import resource
import signal
import socket
import sys
from typing import Any

from jaxscope.settings import Limits

_NOT_ALLOWED = "jaxscope's sandbox does not allow {what}"

# Audit events (CPython 3.11, "Audit events table") that start or replace a process.
_PROCESS_EVENTS = {
    "os.system": "running shell commands (os.system)",
    "os.fork": "creating processes (os.fork)",
    "os.forkpty": "creating processes (os.forkpty)",
    "os.exec": "replacing the process (os.exec*)",
    "os.posix_spawn": "creating processes (os.posix_spawn)",
    "os.spawn": "creating processes (os.spawn*)",
    "os.startfile": "starting programs (os.startfile)",
    "subprocess.Popen": "creating processes (subprocess)",
    "pty.spawn": "creating processes (pty.spawn)",
}

_installed = False
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _set(which: int, soft: int, hard: int | None = None) -> None:
    cur_soft, cur_hard = resource.getrlimit(which)
    del cur_soft
    if hard is None:
        hard = soft
    # A process may lower its hard limit but never raise it (unless privileged).
    if cur_hard != resource.RLIM_INFINITY:
        hard = min(hard, cur_hard) if hard != resource.RLIM_INFINITY else cur_hard
        soft = min(soft, hard) if soft != resource.RLIM_INFINITY else hard
    resource.setrlimit(which, (soft, hard))


def apply_startup_limits(limits: Limits) -> None:
    """Address space (``limits.address_space_bytes``, bytes; 0 = unlimited), process count
    (``limits.nproc``; Linux ignores it for root) and no core dumps. Call before importing JAX."""
    if limits.address_space_bytes > 0:
        _set(resource.RLIMIT_AS, limits.address_space_bytes)
    if limits.nproc > 0:
        _set(resource.RLIMIT_NPROC, limits.nproc)
    _set(resource.RLIMIT_CORE, 0)


def die_with_parent(expected_parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent (the supervisor) dies
    (``prctl(PR_SET_PDEATHSIG)``), so that a worker busy sleeping in user code cannot outlive a
    killed server. Exits at once if the parent already died. A no-op where prctl is missing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != expected_parent:
        os._exit(0)


def cpu_seconds_used() -> float:
    """User + system CPU seconds of this process (all threads) so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def set_cpu_budget(seconds: float) -> None:
    """Let this process use ``seconds`` more CPU seconds: the soft ``RLIMIT_CPU`` becomes
    ``ceil(used + seconds)``; past it the kernel sends SIGXCPU, which ends the worker (the
    supervisor reports ``timeout``). The hard limit stays unlimited so later jobs can raise it."""
    soft = math.ceil(cpu_seconds_used() + seconds)
    _set(resource.RLIMIT_CPU, soft, resource.RLIM_INFINITY)


def _refuse(what: str) -> None:
    raise PermissionError(_NOT_ALLOWED.format(what=what))


def _is_network(sock: Any) -> bool:
    family = getattr(sock, "family", None)
    return not (hasattr(socket, "AF_UNIX") and family == socket.AF_UNIX)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    what = _PROCESS_EVENTS.get(event)
    if what is not None:
        _refuse(what)
    if event in ("os.kill", "os.killpg"):
        pid = args[0] if args else None
        if pid not in (0, os.getpid()) or event == "os.killpg":
            _refuse("signalling other processes (os.kill)")
    elif event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        if args and _is_network(args[0]):
            _refuse(f"network access ({event})")


def install_audit_hook() -> None:
    """Install (once per process; audit hooks cannot be removed) the hook that refuses process
    creation, signals to other processes and non-AF_UNIX ``connect``/``bind``/``sendto``."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
