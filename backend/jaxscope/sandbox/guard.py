"""The in-process defences of a sandbox worker: resource limits, privilege drop, an audit hook.

``apply_startup_limits`` runs before JAX is imported (``RLIMIT_AS``, ``RLIMIT_NPROC``,
``RLIMIT_CORE=0``). Once the worker is warm and before any user code runs:
``drop_privileges`` switches a root worker to a uid of its own (group ``nobody``; so user code
cannot signal the root server or another session's worker, nor write root-owned files;
``PR_SET_NO_NEW_PRIVS``; ``RLIMIT_NPROC`` then counts this worker alone),
``set_cpu_lifetime`` fixes the hard ``RLIMIT_CPU`` of the worker's whole life,
``remove_unaudited_spawners`` deletes the process-creating and signalling functions that raise no
audit event, and ``install_audit_hook`` refuses process creation, signals to other processes,
network sockets and object-graph introspection with a clear ``PermissionError``.
``set_cpu_budget`` runs before every job (soft ``RLIMIT_CPU`` = CPU used so far + the job's budget,
so SIGXCPU ends a runaway job).

The hook and the deletions are a seatbelt against accidents and casual misuse, *not* the
boundary: ``ctypes`` can call ``fork``/``kill``/``connect`` directly. The boundaries are the
unprivileged user, the separate process the supervisor kills on any overrun, and, hosted, a
container without network.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import pwd
import resource
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from jaxscope.settings import Limits

_NOT_ALLOWED = "jaxscope's sandbox does not allow {what}"

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_PR_SET_NO_NEW_PRIVS = 38

# The unprivileged user a root worker becomes before running user code.
UNPRIVILEGED_USER = "nobody"  # its group is the workers' group
# Root-started workers run user code as WORKER_UID_BASE + pid (no passwd entry needed).
WORKER_UID_BASE = 100_000

# The hard RLIMIT_CPU of a worker's whole life, in per-run CPU budgets: a snippet may raise its
# own soft limit up to it (SIGXCPU can also be ignored), so this bounds what one run can steal;
# the worker retires once less than one budget is left (``cpu_lifetime_left``).
LIFETIME_CPU_BUDGETS = 10

# Modules that start processes or interpreters without an audit event, refused at import (they
# are also dropped from sys.modules so that `import` has to load them again).
_REFUSED_MODULES = frozenset(
    {
        "_posixsubprocess",
        "_xxsubinterpreters",
        "_xxinterpchannels",
        "_testcapi",
        "_testinternalcapi",
        "_testmultiphase",
        "_testsinglephase",
        "_testimportmultiple",
    }
)
# Modules always loaded before the hook, whose functions were trimmed: an import of them means a
# snippet dropped them from sys.modules to get fresh ones with pidfd_open/pidfd_send_signal back.
_TRIMMED_MODULES = frozenset({"posix", "_signal"})


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
    (``limits.nproc``; Linux ignores it for root, it binds once the worker dropped to
    ``nobody``) and no core dumps. Call before importing JAX."""
    if limits.address_space_bytes > 0:
        _set(resource.RLIMIT_AS, limits.address_space_bytes)
    if limits.nproc > 0:
        _set(resource.RLIMIT_NPROC, limits.nproc)
    _set(resource.RLIMIT_CORE, 0)


def _prctl(option: int, arg: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(expected_parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent (the supervisor) dies
    (``prctl(PR_SET_PDEATHSIG)``), so that a worker busy sleeping in user code cannot outlive a
    killed server. Exits at once if the parent already died. A no-op where prctl is missing.
    Linux clears this setting when the process changes its credentials: call again after
    :func:`drop_privileges`."""
    if not _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL):
        return
    if os.getppid() != expected_parent:
        os._exit(0)


def thread_count() -> int:
    """Native threads of this process (``/proc/self/task``; XLA's pools included)."""
    return len(os.listdir("/proc/self/task"))


def _pre_open_unreadable_path() -> dict[str, int]:
    """Directory fds of the ``sys.path`` entries, opened while still privileged (see
    :func:`_reroute_sys_path`)."""
    fds: dict[str, int] = {}
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            with contextlib.suppress(OSError):
                fds[entry] = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
    return fds


def _reroute_sys_path(fds: dict[str, int]) -> None:
    """Keep the standard library importable after the drop: where Python lives under a
    directory ``nobody`` cannot search (``/root/.pyenv`` here, mode 0700), replace the
    ``sys.path`` entry by ``/proc/self/fd/N`` of a directory fd opened while privileged (the
    magic link skips the ancestors' permissions; a process may always use its own fd links)."""
    moved: dict[str, str] = {}
    for i, entry in enumerate(list(sys.path)):
        fd = fds.pop(entry, None)
        if fd is None:
            continue
        if os.access(entry, os.R_OK | os.X_OK):
            os.close(fd)
        else:
            sys.path[i] = moved[entry] = f"/proc/self/fd/{fd}"
    for fd in fds.values():
        os.close(fd)
    # Packages already imported (``encodings``, ``email``...) find their submodules through
    # their own ``__path__``, not ``sys.path``.
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if not isinstance(search, list):
            continue
        for i, entry in enumerate(search):
            for old, new in moved.items():
                if isinstance(entry, str) and entry.startswith(old + os.sep):
                    search[i] = new + entry[len(old) :]
    sys.path_importer_cache.clear()


def worker_uid(pid: int) -> int:
    """The uid a root-started worker runs user code as: :data:`WORKER_UID_BASE` + its pid, so
    every live worker has a uid of its own (pids are unique among live processes) and no
    worker can signal another session's worker, the server, or any root process."""
    return WORKER_UID_BASE + pid


def drop_privileges(workdir: str, parent_pid: int = 0, uid: int = 0) -> int | None:
    """When running as root, become an unprivileged uid of this worker's own
    (``uid``, leased by the supervisor so that no other worker holds it; else
    :func:`worker_uid`; group ``nobody``'s): ``workdir`` (the worker's temp cwd) is chowned to
    it, supplementary groups are cleared (``setgroups([])``), then ``setgid``, ``setuid``;
    ``PR_SET_NO_NEW_PRIVS`` is set (cheap, and setuid binaries then cannot regain root), and the
    parent-death signal is set again (Linux clears it on a credential change). A uid per worker
    (rather than a shared ``nobody``) also makes ``RLIMIT_NPROC`` count this worker alone.

    Returns the new uid, or None when not root (nothing changes). Raises ``OSError`` when the
    switch fails; the worker must then not run user code."""
    if os.geteuid() != 0:
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        return None
    gid = pwd.getpwnam(UNPRIVILEGED_USER).pw_gid
    uid = uid or worker_uid(os.getpid())
    fds = _pre_open_unreadable_path()
    os.chown(workdir, uid, gid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError("the worker could not drop its root privileges")
    clear_keyrings()
    os.environ["HOME"] = workdir
    os.environ["USER"] = os.environ["LOGNAME"] = f"jaxscope-worker-{uid}"
    _reroute_sys_path(fds)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    if parent_pid:
        die_with_parent(parent_pid)
    return uid


def close_inherited_fds() -> None:
    """Close every file descriptor above 2 this process inherited (call first thing: the worker
    needs only stdin, stdout and stderr, its job and event pipes)."""
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


# keyctl(2): the syscall number per machine, the operation and the special keyring ids.
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
_KEYCTL_CLEAR = 7
_KEYRINGS = (-3, -4, -5)  # KEY_SPEC_SESSION_KEYRING, _USER_KEYRING, _USER_SESSION_KEYRING


def clear_keyrings() -> None:
    """Empty this uid's user and user-session keyrings and the session keyring
    (``keyctl(KEYCTL_CLEAR)``): they belong to the uid, not the process, and outlive it, so a
    previous worker of the same uid could leave keys for this one to read. Only for a worker
    uid leased by the supervisor (``namespaces.WORKER_UID_BASE`` and up): a worker started by a
    non-root server runs as the server's own user, whose keys are not ours to clear. A no-op
    where the syscall is unknown or refused."""
    from jaxscope.sandbox.namespaces import UID_SLOTS, WORKER_UID_BASE

    number = _SYS_KEYCTL.get(os.uname().machine)
    if number is None or not WORKER_UID_BASE <= os.getuid() < WORKER_UID_BASE + UID_SLOTS:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        for keyring in _KEYRINGS:
            libc.syscall(number, _KEYCTL_CLEAR, ctypes.c_long(keyring))
    except (OSError, AttributeError):
        pass


def cpu_seconds_used() -> float:
    """User + system CPU seconds of this process (all threads) so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def set_cpu_lifetime(per_run_s: float, floor_s: float = 0.0) -> int:
    """Fix the hard ``RLIMIT_CPU`` once for the worker's life: CPU used so far +
    ``LIFETIME_CPU_BUDGETS`` × ``per_run_s``, and at least ``floor_s`` (seconds, rounded up; the
    floor leaves room for a run whose limit scaled with its program up to ``Limits.ceiling_s``).
    Past it the kernel sends SIGKILL, which a snippet cannot ignore nor (unprivileged) raise.
    Returns the hard limit."""
    hard = math.ceil(cpu_seconds_used() + max(LIFETIME_CPU_BUDGETS * per_run_s, floor_s))
    _set(resource.RLIMIT_CPU, hard, hard)
    return resource.getrlimit(resource.RLIMIT_CPU)[1]


def cpu_lifetime_left() -> float:
    """CPU seconds left before the hard ``RLIMIT_CPU`` (infinity when there is none)."""
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard == resource.RLIM_INFINITY:
        return math.inf
    return hard - cpu_seconds_used()


def set_cpu_budget(seconds: float) -> None:
    """Let this process use ``seconds`` more CPU seconds: the soft ``RLIMIT_CPU`` becomes
    ``ceil(used + seconds)`` (at most the hard limit of :func:`set_cpu_lifetime`); past it the
    kernel sends SIGXCPU, which ends the worker (the supervisor reports ``timeout``)."""
    soft = math.ceil(cpu_seconds_used() + seconds)
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def remove_unaudited_spawners() -> None:
    """Delete what creates processes or signals them without raising an audit event:
    ``os.pidfd_open``/``posix.pidfd_open``, ``signal.pidfd_send_signal``, and
    ``_posixsubprocess.fork_exec`` (from the module object, from ``subprocess._fork_exec``, and
    the modules of :data:`_REFUSED_MODULES` from ``sys.modules``, so that importing them again
    meets the audit hook). ``subprocess`` itself keeps working up to its audit event."""
    import posix

    _signal = sys.modules["_signal"]

    for module, name in (
        (os, "pidfd_open"),
        (posix, "pidfd_open"),
        (signal, "pidfd_send_signal"),
        (_signal, "pidfd_send_signal"),
    ):
        with contextlib.suppress(AttributeError):
            delattr(module, name)
    spawner = sys.modules.get("_posixsubprocess")
    if spawner is not None:
        with contextlib.suppress(AttributeError):
            delattr(spawner, "fork_exec")
    subprocess_module = sys.modules.get("subprocess")
    if subprocess_module is not None and hasattr(subprocess_module, "_fork_exec"):
        subprocess_module._fork_exec = None  # type: ignore[attr-defined]
    for name in _REFUSED_MODULES:
        sys.modules.pop(name, None)


def _make_hook(my_pid: int) -> Callable[[str, tuple[Any, ...]], None]:
    """The audit hook; all of its state lives in this closure (nothing a snippet can reach as a
    module global) and it calls nothing a snippet could monkeypatch (the pid is captured here,
    not read with ``os.getpid`` per event)."""
    not_allowed = _NOT_ALLOWED
    process_events = {
        "os.system": "running shell commands (os.system)",
        "os.fork": "creating processes (os.fork)",
        "os.forkpty": "creating processes (os.forkpty)",
        "os.exec": "replacing the process (os.exec*)",
        "os.posix_spawn": "creating processes (os.posix_spawn)",
        "os.spawn": "creating processes (os.spawn*)",
        "os.startfile": "starting programs (os.startfile)",
        "subprocess.Popen": "creating processes (subprocess)",
        "pty.spawn": "creating processes (pty.spawn)",
        # Reaching the hook itself (and its closure) through the object graph.
        "gc.get_objects": "walking the object graph (gc.get_objects)",
        "gc.get_referrers": "walking the object graph (gc.get_referrers)",
        "gc.get_referents": "walking the object graph (gc.get_referents)",
        "sys._current_frames": "inspecting other threads' frames (sys._current_frames)",
    }.get
    network_events = frozenset({"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"})
    refused_modules = _REFUSED_MODULES | _TRIMMED_MODULES
    af_unix = getattr(socket, "AF_UNIX", None)
    inet_families = frozenset(
        int(f) for f in (getattr(socket, "AF_INET", None), getattr(socket, "AF_INET6", None)) if f
    )
    allowed_pids = (0, my_pid)
    permission_error = PermissionError

    def refuse(what: str) -> None:
        raise permission_error(not_allowed.format(what=what))

    def hook(event: str, args: tuple[Any, ...]) -> None:
        what = process_events(event)
        if what is not None:
            refuse(what)
        if event == "os.kill":
            if not args or args[0] not in allowed_pids:
                refuse("signalling other processes (os.kill)")
        elif event == "os.killpg":
            refuse("signalling process groups (os.killpg)")
        elif event == "import":
            if args and args[0] in refused_modules:
                refuse(f"importing {args[0]}")
        elif event == "socket.__new__":
            # (sock, family, type, proto): an AF_INET(6) socket could listen() (auto-bind) or
            # connect_ex without a bind/connect event; refuse it at creation. Family -1 is
            # ``_socket.socket()`` called without arguments, which makes an AF_INET socket.
            if len(args) > 1 and (args[1] in inet_families or args[1] == -1):
                refuse("network sockets (socket.socket)")
        elif event in network_events:
            family = getattr(args[0], "family", None) if args else None
            if af_unix is None or family != af_unix:
                refuse(f"network access ({event})")

    return hook


def install_audit_hook() -> None:
    """Install the hook of :func:`_make_hook` for this process (audit hooks cannot be removed;
    call once). Refuses process creation, signals to other processes, AF_INET(6) sockets and
    non-AF_UNIX ``connect``/``bind``/``sendto``/``sendmsg``, importing the modules of
    :data:`_REFUSED_MODULES` and :data:`_TRIMMED_MODULES`, and
    ``gc.get_objects``/``get_referrers``/``get_referents``."""
    sys.addaudithook(_make_hook(os.getpid()))
