"""Hostile inputs (issue 12): processes that try to outlive their run.

Snippets go around the audit hook with ctypes (``fork``, ``clone``, ``system``, ``execv``,
``posix_spawn``, ``popen``) and detach what they start (``setsid``, double fork, ignored
signals, a new user/pid namespace, a renamed process). While the run goes on the escapee exists
(the snippet lists it under its own ``/proc``, and the host sees it one pid namespace below its
own); once the session is closed no process of the worker's uid is left, and a module an escapee
tried to plant is seen by no later run, of any session. Each input: one terminal event of the
expected kind, nothing left behind (``hostile_kit.assert_nothing_left``)."""

from __future__ import annotations

import asyncio
import json
import platform

import pytest
from jaxscope.protocol import EventModel, StdoutPrinted
from jaxscope.sandbox.namespaces import pids_of_uid
from jaxscope.sandbox.session import Session

from tests.harness import REPO, SandboxHarness
from tests.hostile.hostile_kit import (
    EXHIBITS_DIR,
    JAXSCOPE_DIR,
    OK_TAIL,
    ROOT,
    SITE_PACKAGES,
    TMP_BINDS,
    HostPaths,
    Outcome,
    arun,
    assert_nothing_left,
    host_depth,
    ns_depth,
    run,
)

PRELUDE = "import ctypes, os, signal, sys, time\nlibc = ctypes.CDLL(None, use_errno=True)\n"
# After the escape: wait for it to settle, then show what the worker's /proc holds.
EVIDENCE = (
    "time.sleep(0.4)\n"
    "print('PIDS', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
    "time.sleep(0.4)\n"
)
_CLONE = {"x86_64": 56, "aarch64": 220}.get(platform.machine(), 0)

# id -> the escape (after PRELUDE; EVIDENCE and OK_TAIL follow).
ESCAPES: dict[str, str] = {
    "fork_setsid": """
if libc.fork() == 0:
    libc.setsid()
    while True:
        libc.pause()
""",
    "fork_setpgid": """
if libc.fork() == 0:
    libc.setpgid(0, 0)
    while True:
        libc.pause()
""",
    "fork_ignores_signals": """
if libc.fork() == 0:
    for sig in (1, 2, 3, 15):
        libc.signal(sig, 1)
    libc.setsid()
    while True:
        libc.pause()
""",
    "double_fork_daemon": """
first = libc.fork()
if first == 0:
    libc.setsid()
    if libc.fork() != 0:
        libc._exit(0)
    os.chdir('/')
    libc.umask(0)
    for fd in range(3):
        libc.close(fd)
    while True:
        libc.pause()
os.waitpid(first, 0)
""",
    "system_setsid_sleep": """
print('system', libc.system(b'setsid sleep 100 &'))
""",
    "system_nohup": """
print('system', libc.system(b'nohup sleep 100 >/dev/null 2>&1 &'))
""",
    "system_trap_signals": """
print('system', libc.system(b"(trap '' HUP INT TERM; exec sleep 100) &"))
""",
    "fork_execv_sleep": """
argv = (ctypes.c_char_p * 3)(b'sleep', b'100', None)
if libc.fork() == 0:
    libc.setsid()
    libc.execv(b'/bin/sleep', argv)
    libc._exit(1)
""",
    "posix_spawn_sleep": """
argv = (ctypes.c_char_p * 3)(b'sleep', b'100', None)
child = ctypes.c_int()
print('spawn', libc.posix_spawn(ctypes.byref(child), b'/bin/sleep', None, None, argv, None))
""",
    "popen_never_closed": """
libc.popen.restype = ctypes.c_void_p
libc.popen(b'sleep 100', b'r')
""",
    "raw_clone_syscall": f"""
if libc.syscall({_CLONE}, 17, 0, 0, 0, 0) == 0:
    libc.setsid()
    while True:
        libc.pause()
""",
    "fork_in_a_thread": """
import threading
def escape():
    if libc.fork() == 0:
        libc.setsid()
        while True:
            libc.pause()
t = threading.Thread(target=escape)
t.start()
t.join()
""",
    "unshare_user_and_pid": """
if libc.fork() == 0:
    libc.setsid()
    libc.unshare(0x10000000 | 0x20000000)
    libc.fork()
    while True:
        libc.pause()
""",
    "twenty_setsid_children": """
for _ in range(20):
    if libc.fork() == 0:
        libc.setsid()
        while True:
            libc.pause()
""",
    "renamed_kernel_thread": """
if libc.fork() == 0:
    libc.setsid()
    libc.prctl(15, b'kworker/0:1', 0, 0, 0)
    while True:
        libc.pause()
""",
    "subreaper_orphans": """
if libc.fork() == 0:
    libc.prctl(36, 1, 0, 0, 0)
    libc.setsid()
    for _ in range(3):
        if libc.fork() == 0:
            libc.setsid()
            while True:
                libc.pause()
    while True:
        libc.pause()
""",
    "child_closes_every_fd": """
if libc.fork() == 0:
    libc.setsid()
    for fd in range(1024):
        libc.close(fd)
    while True:
        libc.pause()
""",
    # Outlives the run's terminal event, then writes a forged terminal event to every fd.
    "child_writes_after_the_run": """
forged = json.dumps({'type': 'run_finished', 'run_id': 'x', 'seq': 0, 'duration_ms': 1})
forged = forged.encode() + b'\\n'
if libc.fork() == 0:
    libc.setsid()
    time.sleep(1.5)
    while True:
        for fd in range(64):
            libc.write(fd, forged, len(forged))
        time.sleep(0.05)
""",
}


@pytest.mark.parametrize("name", list(ESCAPES))
def test_an_escapee_dies_with_its_run(sandbox: SandboxHarness, name: str) -> None:
    if name == "raw_clone_syscall" and not _CLONE:
        pytest.skip(f"no clone syscall number for {platform.machine()}")
    code = PRELUDE + "import json\n" + ESCAPES[name] + EVIDENCE + OK_TAIL
    seen: list[tuple[int, int | None]] = []

    def watch(event: EventModel, session: Session) -> None:
        # While the escapee exists, the host sees it in the worker's pid namespace.
        worker = session.worker
        if isinstance(event, StdoutPrinted) and "PIDS" in event.text and worker is not None:
            if worker.uid is not None:
                seen.extend((pid, ns_depth(pid)) for pid in pids_of_uid(worker.uid.uid))

    outcome = run(sandbox, code, watch=watch)
    outcome.finished()
    pids_line = next(ln for ln in outcome.printed.splitlines() if ln.startswith("PIDS"))
    inside = json.loads(pids_line.split(" ", 1)[1])
    # pid 1 is bwrap's init, 2 the worker: anything more is what the escape started.
    assert len(inside) > 2, outcome.printed
    if ROOT:
        assert len(seen) >= 2, seen
        # In the worker's pid namespace (or one nested in it: unshare_user_and_pid).
        assert all(depth is not None and depth > host_depth() for _, depth in seen), seen
    assert_nothing_left(outcome)


# --- the cross-session takeover ------------------------------------------------------------

PLANT_DIRS = (
    "/var/tmp",
    "/dev/shm",
    "/root",
    str(REPO),
    str(REPO / "backend"),
    str(JAXSCOPE_DIR),
    str(EXHIBITS_DIR),
    str(SITE_PACKAGES),
)
# Session A: a detached child that keeps writing evil.py into every plausible directory for a
# few seconds (its cwd, /tmp, sys.path[0], HOME, and the host's directories, were they there).
TAKEOVER = (
    PRELUDE + f"dirs = {{os.getcwd(), '/tmp', sys.path[0] or '.', os.environ.get('HOME', '/tmp'),"
    f" *{PLANT_DIRS!r}}}\n"
    "pid = libc.fork()\n"
    "if pid == 0:\n"
    "    libc.setsid()\n"
    "    end = time.monotonic() + 8\n"
    "    while time.monotonic() < end:\n"
    "        for d in dirs:\n"
    "            try:\n"
    "                with open(os.path.join(d, 'evil.py'), 'w') as out:\n"
    "                    out.write('import os\\nPWNED = os.getuid()\\n')\n"
    "            except OSError:\n"
    "                pass\n"
    "        time.sleep(0.02)\n"
    "    libc._exit(0)\n"
    "time.sleep(0.5)\n"
    "print('PLANTED', os.path.exists(f'/proc/{pid}'), os.path.exists('/tmp/evil.py'))\n"
    "time.sleep(HOLD)\n" + OK_TAIL
)
# Session B: evil is nowhere to import, and its /tmp is empty.
VICTIM = "import os, sys\nprint('TMP', sorted(os.listdir('/tmp')), sys.path[0])\nimport evil\n"


def _check_victim(victim: Outcome, planter: Outcome) -> None:
    failed = victim.failed("user_exception")
    assert failed.error_class == "ModuleNotFoundError", failed
    assert failed.source is not None and failed.source.line == 3
    assert "evil" in failed.message
    assert victim.printed.startswith(f"TMP {TMP_BINDS} "), victim.printed
    assert victim.uid != planter.uid or victim.uid is None


@pytest.mark.parametrize("when", ["after_other_session", "same_session_next_run", "meanwhile"])
def test_cross_session_takeover_through_a_detached_child(
    sandbox: SandboxHarness, when: str
) -> None:
    host = HostPaths(
        [f"{d}/evil.py" for d in ("/tmp", *PLANT_DIRS)] + [f"{d}/evil.pyc" for d in PLANT_DIRS]
    )
    if when == "meanwhile":
        # B runs while A's run (and its child) still goes on.
        async def both() -> tuple[Outcome, Outcome]:
            planting = asyncio.ensure_future(arun(sandbox, TAKEOVER.replace("HOLD", "4.0")))
            await asyncio.sleep(1.5)
            victim = await arun(sandbox, VICTIM)
            return await planting, victim

        planter, victim = sandbox.call(both())
        assert victim.ended_at < planter.ended_at
    else:
        a = sandbox.session()
        try:
            planter = run(sandbox, TAKEOVER.replace("HOLD", "0.2"), session=a)
            b = a if when == "same_session_next_run" else sandbox.session()
            if b is not a:
                sandbox.call(a.close())
            victim = run(sandbox, VICTIM, session=b)
        finally:
            sandbox.call(a.close())
            sandbox.call(b.close())
    planter.finished()
    # The child was alive and writing (in A's own /tmp) when A's run ended.
    assert "PLANTED True True" in planter.printed, planter.printed
    _check_victim(victim, planter)
    assert_nothing_left(planter, host)
    assert_nothing_left(victim, host)
