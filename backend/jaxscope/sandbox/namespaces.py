"""The outer boundary of a sandbox worker: Linux namespaces through bubblewrap (``bwrap``).

Every worker runs inside its own ``bwrap`` (Debian's ``bubblewrap``, the sandbox Flatpak uses):

- its own **pid namespace** (``--unshare-pid``) whose init is bwrap's reaper: when the supervisor
  kills the worker, or the server dies (``--die-with-parent``), the kernel kills every process
  left in the namespace, including one a snippet detached with ``fork`` + ``setsid``;
- its own **network namespace** (``--unshare-net``): only a loopback of its own, so no
  connection anywhere, loopback services of the host included; also its own IPC, UTS and cgroup
  namespaces;
- a **file system of its own**: a fresh root with read-only binds of the system (``/usr``, the
  libraries, a few files of ``/etc``), the Python installation, the venv and the two packages it
  imports (``jaxscope`` and ``exhibits``), its own ``/proc`` (it sees only its own processes) and
  a minimal ``/dev`` (plus the accelerator's device nodes, where the host has one:
  ``accelerators.py``), and a private, size-capped ``tmpfs`` at ``/tmp`` (its home and working
  directory) that vanishes with the namespace: the server's and other workers' files are not
  there at all, and nothing is left to clean up;
- as **root**, bwrap runs the worker through ``setpriv`` as a uid of its own (:class:`UidLease`)
  in group ``nogroup`` with no supplementary groups and ``no_new_privs``: the worker never holds
  root, not even while JAX starts. Without root, bwrap makes an unprivileged user namespace and
  the worker keeps the server's uid (other workers are still invisible to it).

:func:`sandbox_problem` checks once that namespaces work here; the server refuses to start without
them unless started with ``--unsafe-no-sandbox`` (``JAXSCOPE_NAMESPACES=0``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import grp
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import exhibits
import jaxscope
from jaxscope.sandbox import accelerators

# The uids handed to root-started workers: WORKER_UID_BASE .. WORKER_UID_BASE + UID_SLOTS - 1.
WORKER_UID_BASE = 100_000
UID_SLOTS = 50_000
# Where uid leases are held (one lock file per uid, flock'ed while its worker may exist), shared
# by every jaxscope process on the machine so that two servers never hand out the same uid.
UID_LOCK_DIR = Path(tempfile.gettempdir()) / "jaxscope-worker-uids"

# Files of /etc a worker needs (the dynamic loader's cache, user/group names, the time zone).
_ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "alternatives",
)
# Top-level system directories, bound read-only where they are real directories and recreated as
# the same symlinks where they are symlinks (Debian's merged /usr: /lib -> usr/lib).
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_SETPRIV = "/usr/bin/setpriv"

_MISSING = (
    "bubblewrap (bwrap) is not installed: jaxscope runs every sandbox worker in its own Linux "
    "namespaces through it. Install it (Debian: apt-get install bubblewrap; `make serve` and "
    "`make test` do), or start with --unsafe-no-sandbox to run user code without namespaces "
    "(only for code you trust)."
)


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or this kernel forbids the namespaces it needs (message: why)."""


def bwrap_path() -> str | None:
    """The ``bwrap`` executable on ``PATH``, or None."""
    return shutil.which("bwrap")


def _real(path: str) -> str:
    return os.path.realpath(path)


@functools.cache
def readonly_paths() -> tuple[str, ...]:
    """What a worker sees of the host besides the system directories: the Python installation,
    the venv, and the ``jaxscope`` and ``exhibits`` packages (each bound at its own path)."""
    paths = {
        _real(sys.base_prefix),
        _real(sys.prefix),
        str(Path(_real(jaxscope.__file__)).parent),
        str(Path(_real(exhibits.__file__)).parent),
        # The python executable may live outside its prefix (a venv's bin/python is a symlink).
        str(Path(_real(sys.executable)).parent),
    }
    return _outermost(paths)


def _outermost(paths: set[str]) -> tuple[str, ...]:
    """``paths`` sorted, without those that lie inside another of them."""
    kept = sorted(paths)
    return tuple(p for p in kept if not any(p != q and p.startswith(q + os.sep) for q in kept))


def _parents(paths: tuple[str, ...]) -> list[str]:
    """The ancestors of ``paths`` below ``/`` and outside the system directories, outermost
    first (``/work``, ``/work/main`` for ``/work/main/.venv``)."""
    found: list[str] = []
    for path in paths:
        parts = Path(path).parts[1:-1]
        for i in range(len(parts)):
            parent = "/" + "/".join(parts[: i + 1])
            if parts[0] not in _SYSTEM_DIRS and parent not in found:
                found.append(parent)
    return found


@functools.cache
def worker_gid() -> int:
    """The group of root-started workers: ``nogroup`` (Debian) or ``nobody``."""
    for name in ("nogroup", "nobody"):
        with contextlib.suppress(KeyError):
            return grp.getgrnam(name).gr_gid
    return 65534


def bwrap_argv(
    command: list[str],
    *,
    uid: int | None,
    tmp_bytes: int,
    extra_paths: tuple[str, ...] = (),
    template: bool = False,
    dev: Path = accelerators.DEV,
) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` (argv, absolute paths) in the worker's
    namespaces (see the module docstring). ``uid``: the uid to run as (root only; None keeps the
    caller's); ``tmp_bytes``: the size cap of the private ``/tmp`` (bytes, > 0);
    ``extra_paths``: more host paths bound read-only (another venv and its base Python, for a
    worker of another kind: ``sandbox/kinds.py``).

    ``template``: the command line of a worker *template* (``sandbox/zygote.py``, root only,
    ``uid`` None): the same file system view, but the host's pid namespace (the pids it reports
    are the supervisor's) and the four capabilities its children need to make namespaces of
    their own, mount their ``/proc`` and ``/tmp``, bring up their loopback and switch to their
    uid; user code never runs
    in it, and each child gives the capabilities up before it runs any (design 0053).

    The accelerators' device nodes found in ``dev`` (the host's ``/dev``; a test's fake one)
    are bound into the worker's ``/dev``, with ``/sys`` read-only (``accelerators.bind_args``,
    design 0056): in both command lines, so a template's children see them too.

    Raises :class:`SandboxUnavailable` when ``bwrap`` is not installed."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise SandboxUnavailable(_MISSING)
    argv = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        *(() if template else ("--unshare-pid",)),
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "jaxscope-worker",
    ]
    for name in _SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_symlink():
            argv += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            argv += ["--ro-bind", str(host), str(host)]
    # /etc would be made with the caller's umask (0700 under 077): the worker could not read the
    # files bound for it.
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in _ETC_FILES:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # The CPU list's parents too: made by bwrap they would be 0700 (root's), and a worker under
    # its own uid could not read the list (libtpu's tcmalloc aborts without it: design 0067).
    for parent in ("/sys", "/sys/devices", "/sys/devices/system"):
        argv += ["--perms", "0755", "--dir", parent]
    argv += [
        "--ro-bind-try",
        "/sys/devices/system/cpu",
        "/sys/devices/system/cpu",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        # After --dev: bwrap's fresh /dev would hide nodes bound before it.
        *accelerators.bind_args(dev),
        # The private /tmp first: a checkout or venv that lives under /tmp is bound over it
        # below, instead of being hidden by it.
        "--perms",
        "01777",
        "--size",
        str(tmp_bytes),
        "--tmpfs",
        "/tmp",
    ]
    # bwrap would create the bound paths' parents with the caller's umask (0700 under umask
    # 077, unreadable to the worker's uid): create them 0755 first.
    bound = _outermost({*readonly_paths(), *extra_paths})
    for parent in _parents(bound):
        argv += ["--perms", "0755", "--dir", parent]
    for path in bound:
        argv += ["--ro-bind", path, path]
    argv += ["--chdir", "/tmp"]
    if template:
        caps = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETUID", "CAP_SETGID")
        return [*argv, *(a for cap in caps for a in ("--cap-add", cap)), "--", *command]
    if uid is None:
        return [*argv, "--", *command]
    # bwrap drops every capability of a privileged sandbox but these two, which setpriv needs for
    # the switch; setuid to a non-zero uid clears them again.
    return [
        *argv,
        "--cap-add",
        "CAP_SETUID",
        "--cap-add",
        "CAP_SETGID",
        "--",
        _SETPRIV,
        f"--reuid={uid}",
        f"--regid={worker_gid()}",
        "--clear-groups",
        "--no-new-privs",
        "--",
        *command,
    ]


# gVisor's kernel (``runsc``) reports itself as this Linux (google/gvisor,
# pkg/sentry/syscalls/linux/linux64.go): ``uname -r`` 4.4.0, ``uname -v`` this build string.
_GVISOR_RELEASE = "4.4.0"
_GVISOR_VERSION = "#1 SMP Sun Jan 10 15:06:54 PST 2016"
_ENOSYS_TEXT = os.strerror(errno.ENOSYS)  # "Function not implemented"


@dataclass(frozen=True)
class KernelSays:
    """What the kernel says it is: ``uname -n``, ``-r`` and ``-v``, and ``/proc/version``."""

    nodename: str
    release: str
    version: str
    proc_version: str

    @classmethod
    def here(cls) -> KernelSays:
        name = os.uname()
        try:
            proc_version = Path("/proc/version").read_text(errors="replace").strip()
        except OSError:
            proc_version = ""
        return cls(name.nodename, name.release, name.version, proc_version)


def under_gvisor(kernel: KernelSays) -> bool:
    """Whether ``kernel`` is gVisor's: the Linux 4.4.0 it imitates (a real 4.4 kernel's
    release has a suffix, ``4.4.0-210-generic``, and another build string), ``runsc`` or
    ``gvisor`` in the kernel's own words, or ``runsc`` as the host name (the borrowed TPU
    host's ``uname -n``)."""
    said = " ".join((kernel.release, kernel.version, kernel.proc_version))
    if "runsc" in said.lower() or "gvisor" in said.lower() or kernel.nodename == "runsc":
        return True
    return kernel.release == _GVISOR_RELEASE or _GVISOR_VERSION in said


def _no_sandbox_here(kernel: KernelSays) -> str:
    """The end of a refusal where namespaces cannot be made at all: what ``--unsafe-no-sandbox``
    means there."""
    machine = "gVisor machine" if under_gvisor(kernel) else "machine (a VM of its own)"
    return (
        " No setting here changes that. Where this machine is itself the sandbox (it is under "
        "gVisor, or a VM given to these users alone), start with --unsafe-no-sandbox "
        "(JAXSCOPE_NAMESPACES=0): workers then run without namespaces (the rlimits and the "
        f"audit hook remain), and the {machine} is the boundary between user code and "
        "everything outside it, so keep nothing on it that user code must not read or reach. "
        "Otherwise run jaxscope on a Linux kernel that makes namespaces."
    )


def refusal(bwrap_said: str, kernel: KernelSays) -> str:
    """Why the sandbox cannot be made here, for the user: ``bwrap_said`` is the trial bwrap's
    last line of stderr (or its exit status), ``kernel`` what the kernel says it is."""
    gvisor = under_gvisor(kernel)
    if gvisor or _ENOSYS_TEXT in bwrap_said:
        if gvisor:
            why = (
                "this machine runs under gVisor (its kernel says Linux "
                f"{kernel.release} {kernel.version}), a user-space kernel that does not "
                "implement user, pid and network namespaces for an unprivileged user"
                + (
                    f": unshare fails with ENOSYS ({_ENOSYS_TEXT})."
                    if _ENOSYS_TEXT in bwrap_said
                    else "."
                )
            )
        else:
            why = (
                f"this kernel does not implement them: unshare fails with ENOSYS ({_ENOSYS_TEXT}),"
                " as under a user-space kernel such as gVisor."
            )
        return (
            f"bubblewrap could not create the sandbox's namespaces ({bwrap_said}): {why}"
            + _no_sandbox_here(kernel)
        )
    return (
        f"bubblewrap could not create the sandbox's namespaces on this machine ({bwrap_said})."
        " Enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1"
        " or user.max_user_namespaces), run the container with namespaces allowed, or start "
        "with --unsafe-no-sandbox to run user code without namespaces (only for code you "
        "trust)."
    )


def missing_bwrap(kernel: KernelSays) -> str:
    """The refusal where bubblewrap is not installed (under gVisor, installing it would not
    help: it could make no namespace there)."""
    if not under_gvisor(kernel):
        return _MISSING
    return (
        "bubblewrap (bwrap) is not installed, and it could not make the sandbox's namespaces "
        f"here anyway: this machine runs under gVisor (its kernel says Linux {kernel.release} "
        f"{kernel.version}), which does not implement user, pid and network namespaces for an "
        "unprivileged user." + _no_sandbox_here(kernel)
    )


@functools.cache
def sandbox_problem() -> str | None:
    """Why workers cannot run in namespaces here (bwrap missing, or the kernel refused to make
    the namespaces: e.g. unprivileged user namespaces disabled, a container without
    ``CAP_SYS_ADMIN``, or gVisor, which does not implement them: :func:`refusal`), or None
    when a trial sandbox ran. Checked once per process."""
    if bwrap_path() is None:
        return missing_bwrap(KernelSays.here())
    uid = WORKER_UID_BASE + UID_SLOTS if os.geteuid() == 0 else None
    argv = bwrap_argv(["/bin/true"], uid=uid, tmp_bytes=2**20)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start a sandbox: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        return refusal(why[-1] if why else f"exit status {done.returncode}", KernelSays.here())
    return None


class UidLease:
    """A worker uid held by this process until :meth:`release`: an exclusive ``flock`` on
    ``UID_LOCK_DIR/<uid>``, so that no jaxscope process on the machine hands the uid to another
    worker while this one's processes may still exist. Release only once they are gone."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid = uid
        self._fd: int | None = fd

    def release(self) -> None:
        """Give the uid back (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class _Cursor:
    # A random start, so that two processes (a server, then a CLI run) do not both begin at the
    # first uid: uids are reused as late as possible.
    next = secrets.randbelow(UID_SLOTS)


def lease_uid() -> UidLease:
    """A uid no other live jaxscope worker on this machine holds. The search starts after the
    last uid this process leased (uids are reused as late as possible). Blocking (file locks):
    call it off the event loop. Raises ``RuntimeError`` when all :data:`UID_SLOTS` are held."""
    UID_LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    for step in range(UID_SLOTS):
        slot = (_Cursor.next + step) % UID_SLOTS
        uid = WORKER_UID_BASE + slot
        fd = os.open(UID_LOCK_DIR / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _Cursor.next = slot + 1
        return UidLease(uid, fd)
    raise RuntimeError(f"all {UID_SLOTS} worker uids are in use")


def pids_of_uid(uid: int) -> Iterator[int]:
    """Pids of the live processes whose real uid is ``uid`` (from ``/proc/*/status``); zombies
    (exited, waiting for their parent to reap them) do not count: they can do nothing."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            zombie = False
            for line in _read_proc(f"/proc/{entry.name}/status").split(b"\n"):
                if line.startswith(b"State:"):
                    zombie = line.split()[1] in (b"Z", b"X")
                elif line.startswith(b"Uid:"):
                    if int(line.split()[1]) == uid and not zombie:
                        yield int(entry.name)
                    break


def _read_proc(path: str) -> bytes:
    """The first 4 KiB of a ``/proc`` file (a ``stat``'s whole line; a ``status``'s ``State``
    and ``Uid`` lines), read with bare ``os`` calls: the /proc scans run at every worker's
    start and end, and a file object cost about half of each (design 0074)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def kill_uid(uid: int, timeout_s: float = 30.0) -> bool:
    """SIGKILL every process running as ``uid`` until none is left (blocking: call it off the
    event loop); True when none is left within ``timeout_s``. The wait is long because a fork
    bomb leaves hundreds of forks of a JAX process, each with its own page tables to tear down:
    about 1 s on a quiet 2-core machine, over 10 s on one loaded by a CI run (a uid given up
    on here is never leased again)."""
    import signal

    deadline = time.monotonic() + timeout_s
    while True:
        left = list(pids_of_uid(uid))
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _parent_pids(above: int = 0) -> dict[int, int]:
    """pid -> parent pid of every live process (``/proc/*/stat``) whose pid is over ``above``."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) <= above:
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = _read_proc(f"/proc/{entry.name}/stat")
            # Field 4 (ppid) follows the command name, which may hold spaces, in parentheses.
            parents[int(entry.name)] = int(text[text.rfind(b")") + 2 :].split()[1])
    return parents


def python_in_sandbox(bwrap_pid: int) -> int | None:
    """The host pid of the command bwrap ``bwrap_pid`` runs: its grandchild (bwrap forks the pid
    namespace's init, which forks the command); None when it is not found. The processes with
    a higher pid are read first (both were made after ``bwrap_pid``: reading every process's
    stat took ~1.6 ms CPU per worker start on a host of 160 processes, design 0074), then
    every process (the pids wrapped around)."""
    for parents in (_parent_pids(above=bwrap_pid), _parent_pids()):
        children = [pid for pid, ppid in parents.items() if ppid == bwrap_pid]
        grandchildren = sorted(pid for pid, ppid in parents.items() if ppid in children)
        if grandchildren:
            return grandchildren[0]
    return None


_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


@functools.cache
def become_subreaper() -> bool:
    """Make this process (the supervisor) a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``):
    a process orphaned below it is re-parented to it instead of to the host's init. bubblewrap
    0.8's ``--die-with-parent`` has a window: bwrap killed within ~20 ms of its start (a pool
    closing while it warms) leaves the namespace's init running with parent 1, holding the
    worker's pipes; re-parented here, :func:`reap_stray_sandboxes` finds and kills it. Returns
    whether the kernel accepted it (once per process)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _is_namespace_init(pid: int) -> bool:
    """Whether ``pid`` is the init (pid 1) of a pid namespace below ours (``NSpid`` in its
    status ends in 1; readable for a zombie too)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"NSpid:"):
                    ids = line.split()[1:]
                    return len(ids) > 1 and ids[-1] == b"1"
    except OSError:
        pass
    return False


def reap_stray_sandboxes() -> int:
    """Blocking: SIGKILL and reap the children of this process that are the init of another
    pid namespace: sandbox inits re-parented here when their bwrap died
    (:func:`become_subreaper`), alive (killing one empties its namespace) or already zombies
    (nobody else would reap them). This process's own subprocesses are never touched. Returns
    how many it reaped."""
    import signal

    me = os.getpid()
    reaped = 0
    for pid, ppid in _parent_pids().items():
        if ppid != me or not _is_namespace_init(pid):
            continue
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    reaped += 1
                    break
            except ChildProcessError:
                break
            time.sleep(0.01)
    return reaped
