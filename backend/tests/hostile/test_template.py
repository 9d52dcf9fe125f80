"""Hostile inputs aimed at the warm worker template (issue 36, design 0053).

A forked worker shares its first pages with the template (JAX and the probes, imported once) and
was made by it: these runs try to reach the template's process, memory and control socket, look
for a namespace they share with it or with another worker, and leave state for the next child
(a file in ``/tmp``, a SysV shared memory segment, a message queue, an abstract socket name).
Every guarantee of the bwrap-started worker holds: each worker's namespaces are its own, the
template is not in its pid namespace (no pid to signal, trace or read), its only descriptors are
its own pipes, and the next child finds nothing. Skipped where workers are not forked (no root:
``forked.zygote_problem``)."""

from __future__ import annotations

import json
import os

import pytest
from jaxscope.sandbox.forked import template_pids, zygote_problem
from jaxscope.sandbox.namespaces import _parent_pids

from tests.harness import SandboxHarness
from tests.hostile.hostile_kit import OK_TAIL, assert_nothing_left, run

NAMESPACES = ("pid", "net", "mnt", "ipc", "uts", "cgroup")

NS_VIEW = (
    "import os, json\n"
    f"print(json.dumps({{n: os.readlink('/proc/self/ns/' + n) for n in {NAMESPACES!r}}}))\n"
)


@pytest.fixture(autouse=True)
def _forked(sandbox: SandboxHarness) -> None:
    problem = zygote_problem("jax", sandbox.limits)
    if problem is not None:
        pytest.skip(f"workers are not forked here: {problem}")


def _template_python() -> int:
    """The host pid of the live template's Python (the child of its bwrap)."""
    pids = template_pids()
    assert pids, "no template is running"
    children = [pid for pid, ppid in _parent_pids().items() if ppid == pids[0]]
    assert children, f"template bwrap {pids[0]} has no child"
    return children[0]


def test_each_worker_has_namespaces_of_its_own(sandbox: SandboxHarness) -> None:
    first = run(sandbox, NS_VIEW + OK_TAIL)
    second = run(sandbox, NS_VIEW + OK_TAIL)
    template = _template_python()
    theirs = {n: os.readlink(f"/proc/{template}/ns/{n}") for n in NAMESPACES}
    mine = {n: os.readlink(f"/proc/self/ns/{n}") for n in NAMESPACES}
    views = [json.loads(outcome.printed) for outcome in (first, second)]
    for name in NAMESPACES:
        # The template is in the host's pid namespace (the pids it reports are the server's).
        host = {theirs[name], mine[name]} if name == "pid" else {theirs[name]}
        assert views[0][name] != views[1][name], f"{name} namespace shared: {views}"
        assert not host & {views[0][name], views[1][name]}, f"{name} namespace shared: {views}"
        if name != "pid":
            assert theirs[name] != mine[name], f"the template shares the host's {name} namespace"
    for outcome in (first, second):
        outcome.finished()
        assert_nothing_left(outcome)


# The template's host pid is substituted in; every attempt prints its errno name.
REACH = """import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def tried(result):
    return 'ok' if result == 0 else errno.errorcode[ctypes.get_errno()]
print('kill', tried(libc.kill(TEMPLATE, 0)))
print('kill_init', tried(libc.kill(1, 9)))
print('ptrace_init', tried(libc.ptrace(16, 1, 0, 0)))
print('proc', os.path.exists('/proc/%d' % TEMPLATE))
try:
    open('/proc/1/mem', 'rb').read(1)
    print('init_mem', 'ok')
except OSError as exc:
    print('init_mem', errno.errorcode[exc.errno])
sockets = []
for fd in sorted(os.listdir('/proc/self/fd'), key=int):
    try:
        if os.readlink('/proc/self/fd/' + fd).startswith('socket:'):
            sockets.append(fd)
    except OSError:
        pass  # the directory's own fd, closed by now
print('sockets', sockets)
"""


def test_the_template_is_out_of_reach(sandbox: SandboxHarness) -> None:
    template = _template_python()
    outcome = run(sandbox, REACH.replace("TEMPLATE", str(template)) + OK_TAIL)
    outcome.finished()
    said = dict(line.split(" ", 1) for line in outcome.printed.splitlines())
    # Not in the worker's pid namespace: no such process to signal or read.
    assert said["kill"] == "ESRCH"
    assert said["proc"] == "False"
    # The namespace's init is root's, as bubblewrap's is, and not dumpable: no signal, no
    # trace, no memory.
    assert said["kill_init"] == "EPERM"
    assert said["ptrace_init"] == "EPERM"
    assert said["init_mem"] == "EACCES"
    # No socket: the template's control socket was closed before the namespaces were made.
    assert said["sockets"] == "[]"
    assert_nothing_left(outcome)


LEAVE = """import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
open('/tmp/left-by-a', 'w').write('A')
print('shm', libc.shmget(0x4a53, 4096, 0o1666))
print('msg', libc.msgget(0x4a53, 0o1666))
"""
FIND = """import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print('tmp', os.path.exists('/tmp/left-by-a'))
print('shm', libc.shmget(0x4a53, 0, 0))
print('msg', libc.msgget(0x4a53, 0))
"""


def test_a_child_leaves_nothing_for_the_next(sandbox: SandboxHarness) -> None:
    left = run(sandbox, LEAVE + OK_TAIL)
    left.finished()
    said = dict(line.split(" ", 1) for line in left.printed.splitlines())
    assert int(said["shm"]) >= 0 and int(said["msg"]) >= 0, said  # made, in its own IPC ns
    found = run(sandbox, FIND + OK_TAIL)
    found.finished()
    assert found.printed.splitlines() == ["tmp False", "shm -1", "msg -1"]
    assert_nothing_left(left)
    assert_nothing_left(found)
