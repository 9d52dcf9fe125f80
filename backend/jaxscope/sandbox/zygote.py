"""The warm template of workers (a zygote): ``python -m jaxscope.sandbox.zygote --ctl FD``.

Started once per supervisor process, worker kind and worker environment (``sandbox/forked.py``),
inside bubblewrap with the workers' file system view (``namespaces.bwrap_argv(template=True)``),
as root, by the kind's interpreter (``kinds.module_command``). A JAX template (``--kind jax``)
imports JAX and the runner, says it is ready, and then, between requests, imports every JAX
exhibit's probe and (``--warm``) traces the shipped examples (:func:`_idle_tasks`, design 0076;
it says ``{"idle_done": ...}`` when done); a torch template (``--kind torch``, the
torch venv's python) imports torch, torch_xla and its metrics (what a torch worker's warm-up
imports), the runner and every torch exhibit's probe, and creates no PJRT client. Either starts
**no** backend and no thread of its own, and then forks one worker per request (Android's and
Chromium's zygote: fork after import, then sandbox the child; design 0053). Each request on
the control socket (``AF_UNIX``, ``SOCK_SEQPACKET``, fd ``--ctl``) is one JSON message ``{"id",
"uid", "tmp_bytes", "limits"}`` carrying three descriptors (``SCM_RIGHTS``): the worker's stdin,
stdout and stderr.
The template answers ``{"id", "pid"}`` (the host pid of the child, a process group leader) and
later ``{"exit": pid, "status": code}`` (``subprocess``'s convention) when the child ends.

A request makes three processes, as bubblewrap does:

1. the **helper** (host side, pid ``pid``): ``setsid``, dies with the template, makes new pid,
   network, mount, IPC, UTS and cgroup namespaces (``unshare``), forks the init and waits for
   it, exiting with its status (128 + n when it was killed by signal n, as bwrap does);
2. the **init** (pid 1 of the new pid namespace): mounts a ``/proc`` of its namespace, a private
   size-capped ``tmpfs`` on ``/tmp``, brings its loopback up, stays root (not dumpable) as
   bubblewrap's init does, forks the worker and reaps every orphan until the worker ends;
   when the init dies the kernel kills every process left in the namespace;
3. the **worker** (pid 2): drops to the leased uid (no supplementary groups, ``nogroup``,
   ``no_new_privs``, parent-death signal), then runs :func:`jaxscope.sandbox.runner.main`,
   which closes every other descriptor, applies the rlimits, starts the backend, installs the
   audit hook and writes the ready line, exactly as a bwrap-started worker does.

User code runs only in the worker, after every step above. Nothing the template holds is secret
(its environment is the workers' allowlist); the control socket is closed in the helper before
anything else.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import fcntl
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from jaxscope.protocol import WorkerKind

# <sched.h>, <sys/mount.h>, <linux/prctl.h>
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACES = (
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET
)
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
HOSTNAME = b"jaxscope-worker"
# <linux/sockios.h>, <net/if.h>
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
# A request message's largest size (bytes): a Limits and a few numbers.
MAX_REQUEST_BYTES = 64 * 1024
# Exit status of a helper or init whose set-up failed (the reason is on the worker's stderr).
SETUP_FAILED = 125
# The most bytes of files the preload may leave in the template's /tmp for each child to find
# again (:func:`_tmp_left`; the template's /tmp is 1 MiB).
MAX_TMP_LEFT_BYTES = 2**20
# Seconds a JAX template's idle tasks wait after its ready and after each fork: the children just
# forked warm up (backend, one compile) and the first of them usually runs at once (a request
# was waiting for it); on a 2-core box the idle work would take a core from them (issue 36's
# cold start, design 0079).
IDLE_AFTER_FORK_S = 0.5
# ... but one idle task at least this often while tasks remain, however often forks come: under
# a steady load (forks every few tens of ms) the template would otherwise never import the other
# probes, and every fork of their exhibits would pay its probe's import itself (~0.2 CPU-s;
# design 0080, found by its review).
IDLE_AT_LEAST_EVERY_S = 2.0

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(
    source: bytes, target: bytes, fstype: bytes | None, flags: int, data: bytes | None
) -> None:
    _check(_libc.mount(source, target, fstype, flags, data), f"mount {target.decode()}")


def _exit_code(status: int) -> int:
    """A wait status as the exit code a parent passes on: the child's own, or 128 + signal."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else SETUP_FAILED


def _die_with_parent() -> None:
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _to_devnull() -> None:
    """Point fds 0-2 at /dev/null: only the worker holds its pipes, so that their ends close
    (EOF for the supervisor) when the worker does."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _switch_uid(uid: int | None) -> None:
    """Become ``uid`` in group ``nogroup``/``nobody`` with no supplementary groups (Linux clears
    every capability when the last uid 0 goes), then ``no_new_privs``; None: keep the uid."""
    if uid is not None:
        from jaxscope.sandbox.namespaces import worker_gid

        gid = worker_gid()
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
            raise OSError("the worker could not switch to its uid")
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _loopback_up() -> None:
    """Bring up the new network namespace's own loopback, as bubblewrap does: a connection to
    127.0.0.1 is refused there (nothing listens), never routed anywhere else."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(probe, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _init(request: dict[str, Any], kind: WorkerKind) -> NoReturn:
    """Pid 1 of the worker's pid namespace: mounts, then fork the worker and reap."""
    size = int(request["tmp_bytes"])
    _mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)
    _mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    _mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777".encode())
    _loopback_up()
    _check(_libc.sethostname(HOSTNAME, len(HOSTNAME)), "sethostname")
    os.chdir("/tmp")
    # The init stays root, as bubblewrap's does: the worker (another uid) cannot signal or
    # trace it. Not dumpable either: its /proc files (memory, environment) are root's alone.
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    _die_with_parent()
    worker = os.fork()
    if worker == 0:
        _worker(request, kind)
    _to_devnull()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(SETUP_FAILED)
        if pid == worker:
            os._exit(_exit_code(status))


def _reseed() -> None:
    """Seed numpy's global random state from the OS, as a fresh process's first use does: the
    template's was seeded once, so every child would otherwise draw the same
    ``np.random.rand()`` (Python's ``random`` reseeds itself after a fork; numpy does not)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _worker(request: dict[str, Any], kind: WorkerKind) -> NoReturn:
    """Pid 2: the worker itself; the runner does the rest (see the module docstring)."""
    code = 1
    try:
        uid = request.get("uid")
        _switch_uid(uid)
        # Dumpable again, as after bwrap's exec: the uid switch (and the init's flag, which
        # fork keeps) left it off, which would make the worker's own /proc files root's.
        _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        if uid is not None:
            user = f"jaxscope-worker-{uid}"
            os.environ["USER"] = os.environ["LOGNAME"] = user
        _die_with_parent()
        _remake_tmp(_TMP_LEFT)
        _reseed()
        from jaxscope.sandbox import runner

        # As in a bwrap-started worker (``python -m jaxscope.sandbox.runner``), the runner is
        # ``__main__``: what a snippet reaches there is the same in both (the template's module
        # would otherwise be).
        sys.modules["__main__"] = runner
        code = runner.main(["--limits", json.dumps(request["limits"]), "--kind", kind])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    os._exit(code)


def _helper(
    request: dict[str, Any], fds: list[int], template_pid: int, kind: WorkerKind
) -> NoReturn:
    """The child of the template, on the host side of the new namespaces."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        _die_with_parent()
        if os.getppid() != template_pid:
            os._exit(SETUP_FAILED)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        # The control socket, the wake-up pipe and the request's own copies of the pipes.
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        _check(_libc.unshare(NAMESPACES), "unshare")
        init = os.fork()
        if init == 0:
            try:
                _init(request, kind)
            except BaseException:
                _setup_failed()
        _to_devnull()
        _, status = os.waitpid(init, 0)
        os._exit(_exit_code(status))
    except BaseException:
        _setup_failed()


def _setup_failed() -> NoReturn:
    """End a helper or init whose set-up raised: the traceback on the worker's stderr (the
    supervisor shows its last line), then :data:`SETUP_FAILED`."""
    with contextlib.suppress(Exception):
        sys.stderr.write("jaxscope: the worker's sandbox could not be made:\n")
        traceback.print_exc()
        sys.stderr.flush()
    os._exit(SETUP_FAILED)


def _preload(kind: WorkerKind) -> dict[str, Any]:
    """Import what every worker of ``kind`` imports, start nothing: for JAX, JAX, the runner,
    what a fork would import itself (``runner._preload_jax``) and the first exhibit's probe, the
    other probes coming after the template is ready (:func:`_idle_tasks`); for torch, the
    runner's torch warm-up (torch, torch_xla, its metrics: no PJRT client, which torch_xla
    creates at the first device use, in the run) and every torch probe. Raises when the torch
    runtime was initialised all the same (its client's threads would not survive a fork)."""
    if kind == "torch":
        import torch_xla

        from jaxscope.sandbox import runner

        warm = runner._warm_up_torch()
        if torch_xla._XLAC._xla_runtime_is_initialized():
            raise RuntimeError("the torch template's preload created a PJRT client")
        _, errors = runner._import_probes(kind)
        info = {k: warm[k] for k in ("torch_version", "torch_xla_version")}
        return {**info, "probe_errors": len(errors)}
    import jax
    import jax.numpy

    from jaxscope.sandbox import runner

    runner._preload_jax()
    # The probe of the first exhibit (the registry's first, which the page opens): ~0.23 CPU-s
    # here, once, where a fork made before the idle tasks import it paid it in its own run
    # (the cold serve's first run, design 0076). The others come between requests.
    from exhibits.registry import EXHIBITS

    first = next(e for e in EXHIBITS.values() if e.worker == kind)
    runner.Probes(kind).load(first.id)
    return {"jax_version": jax.__version__}


def _idle_tasks(kind: WorkerKind, warm: bool) -> list[tuple[str, Callable[[], str]]]:
    """What a JAX template does once ready, one task at a time while no request waits (design
    0076): import each JAX probe (a child forked before its probe's import imports it itself,
    as a bubblewrap-started worker does), then, when ``warm``, trace the shipped examples
    (``internals.warm_traces``: the exhibits' default examples first, then the rest of their
    examples), so that a fork's first trace of them finds JAX's helper traces cached. Each
    task is ``(label, run)``; ``run`` returns what became of it. None for a torch template."""
    if kind != "jax":
        return []
    from exhibits.registry import EXHIBITS
    from jaxscope.sandbox import runner

    ours = [e for e in EXHIBITS.values() if e.worker == kind]
    probes = runner.Probes(kind)
    tasks: list[tuple[str, Callable[[], str]]] = []
    for exhibit in ours:

        def load(exhibit_id: str = exhibit.id) -> str:
            try:
                probes.load(exhibit_id)
            except runner.ProbeMissing:
                return "failed"
            return "imported"

        tasks.append((f"exhibits.{exhibit.id}.probe", load))
    if not warm:
        return tasks
    from jaxscope.internals.warm_traces import warm_example

    files: dict[str, str] = {}
    for exhibit in ours:
        examples = exhibit.example_paths()
        if exhibit.default_example in examples:
            files.setdefault(str(examples[exhibit.default_example]), exhibit.id)
    for exhibit in ours:
        for example in exhibit.example_paths().values():
            files.setdefault(str(example), exhibit.id)
    for file_name in files:

        def trace(file_name: str = file_name) -> str:
            with open(file_name, encoding="utf-8") as file:
                return warm_example(file.read(), file_name)

        tasks.append((file_name, trace))
    return tasks


# What the preload left in the template's /tmp (:func:`_tmp_left`), remade in each child's.
_TMP_LEFT: list[tuple[str, int, bytes | None]] = []


def _tmp_left() -> list[tuple[str, int, bytes | None]]:
    """What the preload left in ``/tmp``: ``(path, mode, content)`` of each folder (content
    None) and file, parents first. torch's import makes one (``torch.distributed.nn.jit.
    instantiator``: a ``TemporaryDirectory`` on ``sys.path`` holding the module it wrote); a
    bwrap-started worker has it in its own ``/tmp``, so each forked child gets it again in its
    fresh one (:func:`_remake_tmp`), made by the worker's own uid as there. Raises when there
    is more than :data:`MAX_TMP_LEFT_BYTES`."""
    left: list[tuple[str, int, bytes | None]] = []
    size = 0
    for root, dirs, files in os.walk("/tmp"):
        dirs.sort()
        for name in dirs:
            path = os.path.join(root, name)
            left.append((path, os.stat(path).st_mode & 0o777, None))
        for name in sorted(files):
            path = os.path.join(root, name)
            with open(path, "rb") as file:
                content = file.read(MAX_TMP_LEFT_BYTES + 1)
            size += len(content)
            if size > MAX_TMP_LEFT_BYTES:
                raise RuntimeError(f"the preload left more than {MAX_TMP_LEFT_BYTES} B in /tmp")
            left.append((path, os.stat(path).st_mode & 0o777, content))
    return left


def _remake_tmp(left: list[tuple[str, int, bytes | None]]) -> None:
    """Make ``left`` (:func:`_tmp_left`) in this worker's own ``/tmp``, as its uid."""
    for path, mode, content in left:
        if content is None:
            os.mkdir(path, mode)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "wb") as file:
                file.write(content)


def _vm_bytes() -> int:
    """This process's address space (``VmSize``, bytes): what a child's ``RLIMIT_AS`` must
    exceed (``forked.zygote_problem``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _run_idle(task: tuple[str, Callable[[], str]], threads: int) -> str:
    """Run one idle task and return what became of it; then move what it made out of the
    collector's reach, as the preload's objects are (``gc.freeze``). Exits the template when the
    task left a thread or a JAX backend behind (neither would survive a fork): the supervisor's
    next request then starts a new one."""
    label, run = task
    outcome = run()
    gc.collect()
    gc.freeze()
    now = len(os.listdir("/proc/self/task"))
    grew = now > threads
    backend = "jax" in sys.modules and _backend_started()
    if grew or backend:
        what = f"{now} threads (ready with {threads})" if grew else "a JAX backend"
        sys.stderr.write(f"jaxscope: the template's idle task {label} ({outcome}) left {what}\n")
        os._exit(SETUP_FAILED)
    return outcome


def _backend_started() -> bool:
    from jaxscope.internals.warm_traces import backend_started

    return backend_started()


def _send(ctl: socket.socket, message: dict[str, Any]) -> None:
    ctl.send(json.dumps(message).encode())


def _serve(
    ctl: socket.socket, kind: WorkerKind, idle: list[tuple[str, Callable[[], str]]] | None = None
) -> int:
    """Fork a worker per request; report each child's end; between requests, run the ``idle``
    tasks (:func:`_idle_tasks`) one at a time, from :data:`IDLE_AFTER_FORK_S` after the ready
    and the last fork on, and at least one every :data:`IDLE_AT_LEAST_EVERY_S` while forks keep
    coming. Returns when the supervisor is gone."""
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    # A Python-level handler, so that SIGCHLD interrupts select and writes to the wake-up fd.
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    me = os.getpid()
    tasks = list(reversed(idle or []))
    threads = len(os.listdir("/proc/self/task"))
    outcomes: collections.Counter[str] = collections.Counter()
    idle_cpu = 0.0
    last_fork = last_idle = time.monotonic()
    while True:
        readable: list[int] = []
        due = min(last_fork + IDLE_AFTER_FORK_S, last_idle + IDLE_AT_LEAST_EVERY_S)
        quiet = max(0.0, due - time.monotonic())
        with contextlib.suppress(InterruptedError):
            readable, _, _ = select.select([ctl.fileno(), wake_r], [], [], quiet if tasks else 1.0)
        if not readable and tasks and time.monotonic() >= due:
            started = time.process_time()
            outcomes[_run_idle(tasks.pop(), threads).split(":")[0]] += 1
            idle_cpu += time.process_time() - started
            last_idle = time.monotonic()
            if not tasks:
                # What the idle work did, for the supervisor's log and the tests.
                _send(ctl, {"idle_done": dict(outcomes), "cpu_s": round(idle_cpu, 3)})
            continue
        with contextlib.suppress(BlockingIOError):
            os.read(wake_r, 4096)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            _send(ctl, {"exit": pid, "status": os.waitstatus_to_exitcode(status)})
        if ctl.fileno() not in readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(ctl, MAX_REQUEST_BYTES, 3)
        except OSError:
            return 0
        if not data:
            return 0  # the supervisor closed its end
        request_id = None
        try:
            request = json.loads(data)
            request_id = request.get("id")
            if len(fds) != 3:
                raise ValueError(f"expected 3 descriptors, got {len(fds)}")
            pid = os.fork()
            if pid == 0:
                _helper(request, fds, me, kind)
            last_fork = time.monotonic()
            _send(ctl, {"id": request_id, "pid": pid})
        except Exception as exc:
            _send(ctl, {"id": request_id, "error": f"{type(exc).__name__}: {exc}"})
        finally:
            for fd in fds:
                os.close(fd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxscope.sandbox.zygote")
    parser.add_argument("--ctl", type=int, required=True, help="the control socket's fd")
    parser.add_argument("--kind", choices=("jax", "torch"), default="jax", help="worker kind")
    parser.add_argument(
        "--warm", action="store_true", help="trace the shipped examples between requests"
    )
    ns = parser.parse_args(argv)
    ctl = socket.socket(fileno=ns.ctl)
    ctl.set_inheritable(False)
    kind: WorkerKind = ns.kind
    # The preload is imports, which make many objects and little garbage: with the collector off
    # until the one collection below they take ~12% less CPU (JAX, the runner and the first
    # probe: ~0.14 of ~1.15 CPU-s on a 2-core box; issue 36's cold start, design 0079).
    gc.disable()
    info = _preload(kind)
    _TMP_LEFT[:] = _tmp_left()
    # Everything imported so far lives as long as the template: out of the collector's reach,
    # so that a worker's own full collection (the runner's, before its ready line) scans only
    # what the worker made, and does not write to (copy) every shared page. A JAX template's
    # imports leave ~1,750 unreachable objects of ~190,000 (typing's and dataclasses' cycles:
    # tuples, functions, cells, types; no file or socket, test_template_warm): frozen with the
    # rest, not collected, which took 60-110 ms before the ready (issue 36's cold start).
    if kind != "jax":
        gc.collect()
    gc.freeze()
    gc.enable()  # the idle tasks and every child collect as usual
    threads = len(os.listdir("/proc/self/task"))
    _send(
        ctl,
        {
            "ready": True,
            "kind": kind,
            "threads": threads,
            "vm_bytes": _vm_bytes(),
            "tmp_left": [path for path, _, _ in _TMP_LEFT],
            **info,
        },
    )
    return _serve(ctl, kind, _idle_tasks(kind, ns.warm))


if __name__ == "__main__":
    sys.exit(main())
