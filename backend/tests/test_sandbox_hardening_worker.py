"""The sandbox worker's own defences, through the real supervisor: the audit hook cannot be
switched off from a snippet, the spawners without an audit event are gone, a worker lives in
namespaces of its own (as root: under a leased uid, never root), nothing of a run outlives it,
event text is always valid UTF-8 and capped, and the error kinds of odd failures. Snippets from
the adversarial test (breakit).

Since issue 12 a worker serves one run and is killed after its terminal event:
``session.last_worker`` is the one that served the session's last run."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import jaxscope
import pytest
from jaxscope import cli
from jaxscope.protocol import EventModel, RunFailed, RunFinished, StdoutPrinted
from jaxscope.sandbox.namespaces import UID_SLOTS, WORKER_UID_BASE, pids_of_uid, worker_gid
from jaxscope.sandbox.runner import (
    PRINT_CHUNK_CHARS,
    StdoutEvents,
)
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import WorkerProcess
from jaxscope.settings import Limits
from jaxscope.user_text import PRINT_CAP_BYTES, TRUNCATED_NOTE

from tests.harness import SandboxHarness, assert_one_terminal

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="the privilege drop only happens as root")
OK = "def f(x):\n    return x * 100.0\nargs = (1.0,)\n"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxHarness]:
    harness = SandboxHarness(Limits(wall_s=20.0, cpu_s=10.0), size=1)
    yield harness
    harness.close()


@pytest.fixture()
def victim() -> Iterator[int]:
    """A process of the test's own user that snippets try to kill."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc.pid
    proc.kill()
    proc.wait()


def failed(events: list) -> RunFailed:  # type: ignore[type-arg]
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, RunFailed), terminal
    return terminal


def finished(events: list) -> RunFinished:  # type: ignore[type-arg]
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, RunFinished), terminal
    return terminal


def printed(events: list) -> str:  # type: ignore[type-arg]
    return "".join(e.text for e in events if isinstance(e, StdoutPrinted))


def served_by(session: Session) -> WorkerProcess:
    """The worker that served ``session``'s last run (killed after it)."""
    worker = session.last_worker
    assert worker is not None and session.worker is None and not worker.alive
    return worker


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# --- 1. the audit hook ----------------------------------------------------------------------


def test_hook_state_is_not_reachable_from_the_guard_module(sandbox: SandboxHarness) -> None:
    # breakit t2 #1 cleared guard._PROCESS_EVENTS and then ran os.system.
    code = (
        "import os, jaxscope.sandbox.guard as g\n"
        "for name in [n for n in vars(g) if not n.startswith('__')]:\n"
        "    value = getattr(g, name)\n"
        "    if isinstance(value, (dict, set)):\n"
        "        value.clear()\n"
        "    elif callable(value):\n"
        "        setattr(g, name, lambda *a, **k: None)\n"
        "os.system('true')\n"
    )
    f = failed(sandbox.run(code))
    assert (f.kind, f.error_class) == ("user_exception", "PermissionError")
    assert "os.system" in f.message


@pytest.mark.parametrize(
    "code",
    [
        "import gc\ngc.get_objects()\n",
        "import gc\ngc.get_referrers(len)\n",
        "import gc\ngc.get_referents(len)\n",
    ],
    ids=["get_objects", "get_referrers", "get_referents"],
)
def test_object_graph_walks_are_refused(sandbox: SandboxHarness, code: str) -> None:
    f = failed(sandbox.run(code))
    assert f.error_class == "PermissionError" and "object graph" in f.message


def test_patched_getpid_does_not_open_os_kill(sandbox: SandboxHarness, victim: int) -> None:
    # breakit t2 #2 / t23: the hook compared against os.getpid(), which a snippet can replace.
    code = f"import os\nos.getpid = lambda: {victim}\nos.kill({victim}, 9)\n"
    f = failed(sandbox.run(code))
    assert f.error_class == "PermissionError" and "os.kill" in f.message
    assert alive(victim)


@pytest.mark.parametrize(
    ("code", "error_class"),
    [
        ("import os\nos.pidfd_open(1)\n", "AttributeError"),
        ("import posix\nposix.pidfd_open(1)\n", "AttributeError"),
        ("import signal\nsignal.pidfd_send_signal(0, 0)\n", "AttributeError"),
        ("import _signal\n_signal.pidfd_send_signal(0, 0)\n", "AttributeError"),
        ("import _posixsubprocess\n", "PermissionError"),
        ("import sys\ndel sys.modules['posix']\nimport posix\n", "PermissionError"),
        ("import sys\nsys.modules['_posixsubprocess'].fork_exec\n", "KeyError"),
        ("import subprocess\nsubprocess._fork_exec.__name__\n", "AttributeError"),
        ("import _xxsubinterpreters\n", "PermissionError"),
        ("import socket\nsocket.socket().listen()\n", "PermissionError"),
        ("import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n", "PermissionError"),
    ],
    ids=[
        "pidfd_open",
        "posix_pidfd_open",
        "pidfd_send_signal",
        "_signal_pidfd",
        "import_posixsubprocess",
        "reimport_posix",
        "posixsubprocess_in_sys_modules",
        "subprocess_fork_exec",
        "subinterpreters",
        "listen_without_bind",
        "inet6_socket",
    ],
)
def test_unaudited_routes_are_closed(sandbox: SandboxHarness, code: str, error_class: str) -> None:
    f = failed(sandbox.run(code))
    assert (f.kind, f.error_class) == ("user_exception", error_class), f


def test_unix_sockets_still_work(sandbox: SandboxHarness) -> None:
    code = (
        "import socket\na, b = socket.socketpair()\na.sendall(b'ping')\n"
        "print(b.recv(4).decode())\n" + OK
    )
    events = sandbox.run(code)
    finished(events)
    assert printed(events) == "ping\n"


# --- 2. privilege drop --------------------------------------------------------------------------


@needs_root
def test_root_worker_runs_user_code_as_its_leased_uid(sandbox: SandboxHarness) -> None:
    """As root, bwrap starts the worker through ``setpriv`` as a uid leased for it alone
    (100000-149999), group ``nogroup``, no supplementary groups, ``no_new_privs``, no
    capabilities: its real, effective, saved and file-system uids are all that uid (no way back
    to root), in every thread, and the handshake (sent after the warm-up, before any user code)
    already reports it. Its cwd and home are its private ``/tmp``, writable by it."""
    code = (
        "import os, resource\n"
        "print(os.getpid(), os.getuid(), os.geteuid(), os.getgid(), os.getgroups())\n"
        "with open('/proc/self/status') as s:\n"
        "    status = {l.split(':')[0]: l.split()[1:] for l in s}\n"
        "print(*status['Uid'], *status['Gid'])\n"
        "print(status['CapPrm'][0], status['CapEff'][0], status['NoNewPrivs'][0])\n"
        "print(resource.getrlimit(resource.RLIMIT_NPROC)[0])\n"
        "uids = set()\n"
        "for task in os.listdir('/proc/self/task'):  # every thread, XLA's included\n"
        "    with open(f'/proc/self/task/{task}/status') as s:\n"
        "        uids |= {l.split()[2] for l in s if l.startswith('Uid:')}\n"
        "print(sorted(uids))\n"
        "open('scratch.txt', 'w').write('the worker owns its cwd')\n"
        "print(os.getcwd(), os.environ['HOME'], os.path.getsize('scratch.txt'))\n" + OK
    )
    session = sandbox.session()
    try:
        events = sandbox.run(code, session=session)
    finally:
        sandbox.call(session.close())
    finished(events)
    worker = served_by(session)
    assert worker.uid is not None
    uid, gid = worker.uid.uid, worker_gid()
    assert WORKER_UID_BASE <= uid < WORKER_UID_BASE + UID_SLOTS
    assert worker.info["uid"] == uid
    ids, status_ids, privs, nproc, thread_uids, home = printed(events).splitlines()
    assert ids == f"2 {uid} {uid} {gid} []"  # pid 2: its own pid namespace
    assert status_ids == f"{uid} {uid} {uid} {uid} {gid} {gid} {gid} {gid}"
    assert privs == "0000000000000000 0000000000000000 1"
    assert int(nproc) == sandbox.limits.nproc
    assert thread_uids == f"['{uid}']"
    assert home == "/tmp /tmp 23"
    assert worker.workdir is None  # no host directory of the worker's


def test_one_sessions_worker_cannot_see_nor_signal_anothers(sandbox: SandboxHarness) -> None:
    """Each worker has its own pid namespace: another session's worker, running meanwhile, is
    not even visible (its ``/proc`` lists only its own namespace's init and itself), so even
    ctypes (around the audit hook) gets ESRCH for the other worker's host pid, and no pid inside
    names it (the other worker is pid 2 in its own namespace, as this one is in its own). As
    root, the two also run as different uids."""
    first, second = sandbox.session(), sandbox.session()
    holds = "import time\ntime.sleep(4)\n" + OK

    async def scenario() -> tuple[list[EventModel], list[EventModel], bool]:
        holding = asyncio.ensure_future(sandbox.arun(first, holds, wall_s=30))
        while not first.holds_worker():
            await asyncio.sleep(0.05)
        victim = first.worker
        assert victim is not None
        code = (
            "import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
            f"print(libc.kill({victim.worker_pid}, 0), ctypes.get_errno())\n"
            f"print(libc.kill({victim.pid}, 0), ctypes.get_errno())\n" + OK
        )
        attack = await sandbox.arun(second, code, wall_s=30)
        still_alive = victim.alive
        return await holding, attack, still_alive

    try:
        held, attack, still_alive = sandbox.call(scenario())
        finished(attack)
        assert printed(attack).splitlines() == ["[1, 2]", "-1 3", "-1 3"]  # ESRCH
        assert still_alive
        finished(held)
        if ROOT:
            one, two = served_by(first).uid, served_by(second).uid
            assert one is not None and two is not None and one.uid != two.uid
    finally:
        sandbox.call(first.close())
        sandbox.call(second.close())


@needs_root
def test_worker_cannot_kill_the_server_nor_write_host_files(
    sandbox: SandboxHarness, victim: int, tmp_path: Path
) -> None:
    # The routes around the audit hook (ctypes) meet the kernel: its namespace's init is root's
    # (EPERM), host processes are not in its pid namespace (ESRCH), the host's /tmp is not in its
    # file system, and what the host shares with it (the jaxscope package) is root's and bound
    # read-only.
    root_file = tmp_path / "root.txt"
    root_file.write_text("root's\n")
    root_file.chmod(0o644)
    package = Path(jaxscope.__file__)
    before = package.read_bytes()
    code = (
        "import ctypes, os, jaxscope\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(os.getppid(), libc.kill(os.getppid(), 9), ctypes.get_errno())\n"
        f"print(libc.kill({os.getpid()}, 0), ctypes.get_errno())\n"
        f"print(libc.kill({victim}, 9), ctypes.get_errno())\n"
        f"print(os.path.exists({str(root_file)!r}))\n"
        "open(jaxscope.__file__, 'a').write('pwned')\n"
    )
    events = sandbox.run(code)
    f = failed(events)
    assert (f.error_class, f.kind) == ("PermissionError", "user_exception"), f
    assert "Permission denied" in f.message
    assert printed(events).splitlines() == ["1 -1 1", "-1 3", "-1 3", "False"]
    assert alive(victim)
    assert root_file.read_text() == "root's\n"
    assert package.read_bytes() == before


@needs_root
def test_nproc_binds_after_the_drop(sandbox: SandboxHarness) -> None:
    # Linux ignores RLIMIT_NPROC for root; as nobody, a thread past the limit cannot start (so a
    # ctypes fork bomb stops at limits.nproc processes and threads of all workers together).
    code = (
        "import resource, threading\n"
        "hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]\n"
        "resource.setrlimit(resource.RLIMIT_NPROC, (1, hard))\n"
        "threading.Thread(target=print).start()\n"
    )
    session = sandbox.session()  # the worker is left unable to start threads: closed after
    try:
        f = failed(sandbox.run(code, session=session))
        assert (f.error_class, f.message) == ("RuntimeError", "can't start new thread")
    finally:
        sandbox.call(session.close())


def test_print_and_stdout_are_restored_for_the_next_run(sandbox: SandboxHarness) -> None:
    # breakit t9: a run that replaced sys.stdout silenced the session's later runs.
    session = sandbox.session()
    try:
        silence = "import builtins, io, sys\nsys.stdout = io.StringIO()\nbuiltins.print = len\n"
        finished(sandbox.run(silence + OK, session=session))
        events = sandbox.run("print('visible')\n" + OK, session=session)
        assert printed(events) == "visible\n"
    finally:
        sandbox.call(session.close())


# A supervisor of its own, so that the test can kill it: it spawns one worker, starts a run that
# sleeps in user code (so the worker does not read its job pipe's EOF) and prints the worker's pid.
SUPERVISOR = """
import asyncio
from jaxscope.protocol import RunRequest
from jaxscope.sandbox.worker import WorkerProcess
from jaxscope.settings import Limits

async def main():
    worker = await WorkerProcess.spawn(Limits(wall_s=100.0, cpu_s=100.0))

    async def emit(event):
        if event.type == "stage_started":
            print(worker.worker_pid, flush=True)

    request = RunRequest(run_id="r", exhibit="tracing", code="import time\\ntime.sleep(100)\\n")
    await worker.run(request, emit, cancel=asyncio.Event())

asyncio.run(main())
"""


def test_worker_dies_with_its_supervisor_after_the_drop() -> None:
    # Linux clears PR_SET_PDEATHSIG when a process changes its credentials: the drop sets it
    # again, or a worker sleeping in user code would outlive a killed server.
    supervisor = subprocess.Popen([sys.executable, "-c", SUPERVISOR], stdout=subprocess.PIPE)
    assert supervisor.stdout is not None
    worker = int(supervisor.stdout.readline())
    try:
        supervisor.kill()
        supervisor.wait()
        deadline = time.monotonic() + 10
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(worker)
    finally:
        supervisor.stdout.close()
        if alive(worker):
            os.kill(worker, 9)


def test_jax_still_works_after_the_drop(sandbox: SandboxHarness) -> None:
    code = (
        "import fractions, mmap, statistics  # stdlib modules the warm-up did not import\n"
        "import json.tool, codecs  # a submodule of an imported package; a lazy codec\n"
        "codecs.lookup('koi8_r')\n"
        "import jax, jax.numpy as jnp\n"
        "def f(x):\n"
        "    jax.debug.print('x = {}', x)\n"
        "    return jnp.sin(x) @ jnp.cos(x).T\n"
        "args = (jnp.arange(6.0).reshape(2, 3),)\n"
    )
    events = sandbox.run(code, "stations")
    finished(events)
    assert "x = [[0. 1. 2.]\n [3. 4. 5.]]\n" in printed(events)


def test_cpu_hard_limit_cannot_be_raised(sandbox: SandboxHarness) -> None:
    # breakit t5: the snippet raised RLIMIT_CPU to unlimited and spun forever after its run.
    code = (
        "import resource\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_CPU)\n"
        "print(hard != resource.RLIM_INFINITY, soft <= hard)\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY,) * 2)\n"
    )
    events = sandbox.run(code)
    f = failed(events)
    assert printed(events) == "True True\n"
    assert f.error_class == "ValueError" and "not allowed to raise maximum limit" in f.message


# --- 3. nothing after the terminal event ------------------------------------------------------


def test_event_fd_is_not_a_main_global(sandbox: SandboxHarness) -> None:
    code = "import __main__\nprint(hasattr(__main__, 'EVENT_FD'), hasattr(__main__, 'JOB_FD'))\n"
    assert printed(sandbox.run(code + OK)) == "False False\n"


def test_del_runs_inside_the_run(sandbox: SandboxHarness) -> None:
    # breakit t22: a __del__ that sleeps used to run after run_finished, stalling the next run.
    code = (
        "import gc, time\ngc.disable()\n"
        "class A:\n    def __del__(self):\n        time.sleep(30)\n"
        "holder = A()\n" + OK
    )
    f = failed(sandbox.run(code, wall_s=3.0))
    assert f.kind == "timeout"


def test_del_output_belongs_to_its_run(sandbox: SandboxHarness) -> None:
    code = "class A:\n    def __del__(self):\n        print('bye')\nholder = A()\n" + OK
    events = sandbox.run(code)
    finished(events)
    assert printed(events) == "bye\n"


def test_thread_left_running_dies_with_its_run(sandbox: SandboxHarness) -> None:
    # breakit t3: a thread printing after the run leaked into the session's next run. The
    # worker is killed after its terminal event, its thread with it; each later run gets a
    # fresh worker and none sees the ghost's output.
    ghost = (
        "import threading, time\n"
        "def spam():\n    while True:\n        print('GHOST'); time.sleep(0.001)\n"
        "threading.Thread(target=spam, daemon=True).start()\n" + OK
    )
    session = sandbox.session()
    try:
        finished(sandbox.run(ghost, session=session))
        haunted = served_by(session)
        served = [haunted]
        for _ in range(3):
            events = sandbox.run(OK, session=session)
            finished(events)
            assert "GHOST" not in printed(events)
            served.append(served_by(session))
        assert len({id(w) for w in served}) == 4
        sandbox.call(haunted.wait_closed())
        assert haunted.proc.returncode is not None and not alive(haunted.worker_pid)
    finally:
        sandbox.call(session.close())


def test_without_namespaces_a_root_worker_still_runs_as_a_leased_uid(tmp_path: Path) -> None:
    """``Limits(namespaces=False)`` (``--unsafe-no-sandbox``): the worker runs on the host, in
    a host temp directory of its own (removed after it), its pid the host's; as root it still
    runs user code as a leased uid and a ``setsid`` orphan it leaves is killed (``kill_uid``)
    once the worker is gone. The CLI's flag runs a snippet end to end."""
    harness = SandboxHarness(Limits(wall_s=20.0, cpu_s=10.0, namespaces=False), size=0)
    session = harness.session()
    code = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print(os.getpid(), os.getuid(), os.getcwd(), os.environ['HOME'])\n"
        "child = libc.fork()\n"
        "if child == 0:\n"
        "    libc.setsid()\n"
        "    while True:\n"
        "        libc.pause()\n"
        "print(child)\n" + OK
    )
    orphan = 0
    try:
        events = harness.run(code, session=session)
        finished(events)
        worker = served_by(session)
        ids, child = printed(events).splitlines()
        orphan = int(child)
        pid, uid, cwd, home = ids.split()
        assert int(pid) == worker.worker_pid == worker.pid  # no bwrap, no pid namespace
        assert worker.workdir is not None and cwd == home == worker.workdir
        if ROOT:
            assert worker.uid is not None and int(uid) == worker.uid.uid == worker.info["uid"]
            assert WORKER_UID_BASE <= int(uid) < WORKER_UID_BASE + UID_SLOTS
        else:
            assert int(uid) == os.getuid()
        # The session's reaper cleans up in a thread (the workdir's removal, then kill_uid).
        # Killed processes may stay zombies for a while (reaped by the host's init): nothing
        # of the uid may still run.
        lease = worker.uid
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (
            os.path.exists(worker.workdir)
            or (lease is not None and any(alive(p) for p in pids_of_uid(lease.uid)))
        ):
            time.sleep(0.1)
        assert not os.path.exists(worker.workdir)
        if ROOT:
            assert lease is not None and not alive(orphan)
            assert not any(alive(p) for p in pids_of_uid(lease.uid))
    finally:
        harness.call(session.close())
        harness.close()
        if orphan > 0 and not ROOT and alive(orphan):
            os.kill(orphan, 9)  # without root nothing can tell the orphan from the server's
    path = tmp_path / "ok.py"
    path.write_text(OK)
    assert cli.main(["run", "tracing", str(path), "--unsafe-no-sandbox"]) == 0


# --- 4. event text ------------------------------------------------------------------------------


def test_lone_surrogate_in_exception_is_user_exception(sandbox: SandboxHarness) -> None:
    f = failed(sandbox.run('raise ValueError("bad \\udcff")\n'))
    assert (f.kind, f.error_class, f.message) == ("user_exception", "ValueError", "bad ?")
    f = failed(sandbox.run('def f(x):\n    raise ValueError("bad \\udcff")\nargs = (1.0,)\n'))
    assert (f.kind, f.message, f.source and f.source.line) == ("user_exception", "bad ?", 2)


def test_lone_surrogate_in_print(sandbox: SandboxHarness) -> None:
    events = sandbox.run('print("\\udcff bad")\n' + OK)
    finished(events)
    assert printed(events) == "? bad\n"


def test_print_flood_is_chunked_and_capped(sandbox: SandboxHarness) -> None:
    code = 'print(("y" * 999 + "\\n") * 3000)\nprint("x" * 5_000_000)\n' + OK
    events = sandbox.run(code)
    finished(events)
    texts = [e.text for e in events if isinstance(e, StdoutPrinted)]
    assert all(len(t) <= PRINT_CHUNK_CHARS for t in texts)
    # The cap cuts a line: the note starts a line of its own.
    assert texts[-1] == "\n" + TRUNCATED_NOTE
    assert sum(map(len, texts[:-1])) == PRINT_CAP_BYTES
    assert "".join(texts[:-1]) == (("y" * 999 + "\n") * 3000)[:PRINT_CAP_BYTES]


def test_stdout_without_buffer_behaves_like_a_text_stream() -> None:
    out = StdoutEvents()
    assert (out.encoding, out.errors, out.isatty(), out.writable()) == (
        "utf-8",
        "replace",
        False,
        True,
    )
    with pytest.raises(io.UnsupportedOperation):
        out.fileno()
    assert not hasattr(out, "buffer")


def test_stdout_attributes_in_a_snippet(sandbox: SandboxHarness) -> None:
    code = (
        "import io, sys\n"
        "try:\n    sys.stdout.fileno()\nexcept io.UnsupportedOperation:\n    print('no fd')\n"
        "print(sys.stdout.encoding, sys.stdout.errors, sys.stdout.isatty())\n" + OK
    )
    events = sandbox.run(code)
    finished(events)
    assert printed(events) == "no fd\nutf-8 replace False\n"


# --- 5. error kinds and lines -------------------------------------------------------------------


def test_null_byte_is_a_syntax_error_at_its_line(sandbox: SandboxHarness) -> None:
    f = failed(sandbox.run("import jax\ndef f(x): return x\x00\nargs = (1.0,)\n"))
    assert (f.kind, f.error_class) == ("syntax", "SyntaxError")
    assert f.source is not None and (f.source.line, f.source.column) == (2, 18)


def test_mmap_beyond_address_space_is_memory(sandbox: SandboxHarness) -> None:
    if sandbox.limits.address_space_bytes == 0:
        pytest.skip("no address-space limit on this host")
    f = failed(sandbox.run("import mmap\nm = mmap.mmap(-1, 2**34)\n"))
    assert (f.kind, f.error_class) == ("memory", "OSError")


@pytest.mark.parametrize(
    ("code", "cause"),
    [
        ("x = " + "+".join(["1"] * 60_000) + "\n", "RecursionError"),  # the compiler
        ("x = " + "-" * 150_000 + "1\n", "MemoryError"),  # the parser's stack
    ],
    ids=["compiler_recursion", "parser_stack"],
)
def test_too_deeply_nested_code_is_syntax(sandbox: SandboxHarness, code: str, cause: str) -> None:
    f = failed(sandbox.run(code))
    assert (f.kind, f.error_class) == ("syntax", "SyntaxError"), f
    assert "nested too deeply" in f.message and cause in f.message


@pytest.mark.parametrize(
    ("code", "exhibit"),
    [
        ('import jax\n\ndef f(x):\n    y = x + 1\n    return "hello"\nargs = (1.0,)\n', "stations"),
        ("import jax\n\ndef f(x):\n    return x\nargs = (1.0,)\nkwargs = {'y': 2}\n", "tracing"),
        # (static_argnums out of range points at the static_argnums line: test_sandbox.py,
        # test_a_bad_static_setting_fails_at_its_line_in_the_worker)
    ],
    ids=["returns_str", "unknown_kwarg"],
)
def test_jax_errors_without_snippet_frame_point_at_def(
    sandbox: SandboxHarness, code: str, exhibit: str
) -> None:
    f = failed(sandbox.run(code, exhibit))
    assert f.kind == "user_exception" and not f.traceback, f
    assert f.source is not None and (f.source.line, f.source.function) == (3, "f")
    assert f.explanation and "where `f` is defined" in f.explanation
