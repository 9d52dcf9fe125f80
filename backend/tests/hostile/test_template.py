"""Hostile inputs aimed at the warm worker template (issue 36, design 0053).

A forked worker shares its first pages with the template (JAX and the probes, imported once) and
was made by it: these runs try to reach the template's process, memory and control socket, look
for a namespace they share with it or with another worker, and leave state for the next child
(a file in ``/tmp``, a SysV shared memory segment, a message queue, an abstract socket name).
Every guarantee of the bwrap-started worker holds: each worker's namespaces are its own, the
template is not in its pid namespace (no pid to signal, trace or read), its only descriptors are
its own pipes, and the next child finds nothing. Skipped where workers are not forked (no root:
``forked.zygote_problem``).

Each test runs against both templates: the JAX one (a tracing run) and the torch one (a
``pjrt_registry`` run in a torch worker, skipped where the torch venv is not installed); the
torch template is closed after the module (it holds torch's pages while it lives). The torch
template's own promises (no more threads than the JAX template's, no PJRT client, an address
space under the least a forked torch worker may have, what its preload left in ``/tmp`` remade
in each child) are checked at the end."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator

import pytest
from jaxscope.protocol import WorkerKind
from jaxscope.sandbox import forked
from jaxscope.sandbox.forked import template_pids, zygote_problem
from jaxscope.sandbox.kinds import exhibit_limits, kind_problem
from jaxscope.sandbox.namespaces import _parent_pids
from jaxscope.sandbox.worker import worker_env

from exhibits.registry import EXHIBITS
from tests.harness import SandboxHarness
from tests.hostile.hostile_kit import OK_TAIL, Outcome, arun, assert_nothing_left
from tests.hostile.hostile_kit import run as run_in

# The exhibit each kind's runs use, and what makes a snippet a valid run of it.
EXHIBIT: dict[str, str] = {"jax": "tracing", "torch": "pjrt_registry"}
TAIL: dict[str, str] = {"jax": OK_TAIL, "torch": '\npjrt_device = "CPU"\n'}

NAMESPACES = ("pid", "net", "mnt", "ipc", "uts", "cgroup")

NS_VIEW = (
    "import os, json\n"
    f"print(json.dumps({{n: os.readlink('/proc/self/ns/' + n) for n in {NAMESPACES!r}}}))\n"
)


@pytest.fixture(scope="module", autouse=True)
def _close_torch_template() -> Iterator[None]:
    yield
    forked.close_templates("torch")


@pytest.fixture(params=["jax", "torch"])
def kind(request: pytest.FixtureRequest, sandbox: SandboxHarness) -> WorkerKind:
    """The worker kind under test (its template's workers are forked here, else skipped)."""
    kind: WorkerKind = request.param
    if (missing := kind_problem(kind)) is not None:
        pytest.skip(missing)
    problem = zygote_problem(kind, exhibit_limits(EXHIBIT[kind], sandbox.limits))
    if problem is not None:
        pytest.skip(f"workers are not forked here: {problem}")
    return kind


def run(sandbox: SandboxHarness, code: str, kind: WorkerKind) -> Outcome:
    """``code`` (without its tail) as a run of ``kind``'s exhibit."""
    return run_in(sandbox, code + TAIL[kind], exhibit=EXHIBIT[kind], timeout=300.0)


def _template_python(kind: WorkerKind) -> int:
    """The host pid of the live template's Python (the child of its bwrap)."""
    pids = template_pids(kind)
    assert pids, "no template is running"
    children = [pid for pid, ppid in _parent_pids().items() if ppid == pids[0]]
    assert children, f"template bwrap {pids[0]} has no child"
    return children[0]


def test_each_worker_draws_its_own_random_numbers(
    sandbox: SandboxHarness, kind: WorkerKind
) -> None:
    """numpy's and Python's global random states differ between two forked workers, as between
    two fresh processes (the template seeded numpy's once: every child drew the same)."""
    code = "import random\nimport numpy as np\nprint(np.random.rand(), random.random())\n"
    first, second = run(sandbox, code, kind), run(sandbox, code, kind)
    a, b = first.printed.split(), second.printed.split()
    assert a[0] != b[0] and a[1] != b[1], (a, b)


def test_each_worker_has_namespaces_of_its_own(sandbox: SandboxHarness, kind: WorkerKind) -> None:
    # Two runs at once, each holding its worker for 3 s after it printed: the kernel gives a
    # freed namespace's inode number to the next one made, so two runs one after the other
    # could show the same number without sharing anything (a whole suite saw it once a leased
    # spare's replacement started 0.1 s later: design 0080).
    held = NS_VIEW + "import time\ntime.sleep(3)\n" + TAIL[kind]

    async def both() -> list[Outcome]:
        runs = (arun(sandbox, held, exhibit=EXHIBIT[kind]) for _ in range(2))
        return list(await asyncio.gather(*runs))

    first, second = sandbox.call(both(), timeout=300.0)
    spans = [(min(o.stamps), max(o.stamps)) for o in (first, second)]
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1], f"runs did not overlap: {spans}"
    template = _template_python(kind)
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


def test_the_template_is_out_of_reach(sandbox: SandboxHarness, kind: WorkerKind) -> None:
    if not template_pids(kind):
        run(sandbox, "", kind).finished()  # starts the template
    template = _template_python(kind)
    outcome = run(sandbox, REACH.replace("TEMPLATE", str(template)), kind)
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


def test_a_child_leaves_nothing_for_the_next(sandbox: SandboxHarness, kind: WorkerKind) -> None:
    left = run(sandbox, LEAVE, kind)
    left.finished()
    said = dict(line.split(" ", 1) for line in left.printed.splitlines())
    assert int(said["shm"]) >= 0 and int(said["msg"]) >= 0, said  # made, in its own IPC ns
    found = run(sandbox, FIND, kind)
    found.finished()
    assert found.printed.splitlines() == ["tmp False", "shm -1", "msg -1"]
    assert_nothing_left(left)
    assert_nothing_left(found)


# The worker's view of its namespace, its credentials and what it found in /tmp.
VIEW = """import json, os
status = dict(l.split(':', 1) for l in open('/proc/self/status'))
tmp = sorted(os.path.join(r, n) for r, ds, fs in os.walk('/tmp') for n in ds + fs)
print(json.dumps({
    'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit()),
    'init': open('/proc/1/cmdline', 'rb').read().replace(b'\\0', b' ').decode(),
    'ids': [os.getpid(), os.getppid()],
    'uid': os.getresuid(),
    'cap_eff': status['CapEff'].strip(),
    'no_new_privs': status['NoNewPrivs'].strip(),
    'tmp': {p: os.stat(p).st_uid for p in tmp},
}))
"""


def test_the_worker_sees_its_namespace_and_the_tmp_a_started_one_would(
    sandbox: SandboxHarness, kind: WorkerKind
) -> None:
    outcome = run(sandbox, VIEW, kind)
    outcome.finished()
    said = json.loads(outcome.printed)
    assert said["pids"] == [1, 2] and said["ids"] == [2, 1]
    assert "jaxscope.sandbox.zygote" in said["init"] and "--ctl" in said["init"]
    uid = outcome.uid
    assert uid is not None and said["uid"] == [uid] * 3
    assert said["cap_eff"] == "0000000000000000" and said["no_new_privs"] == "1"
    # What the preload left in the template's /tmp (torch: its instantiator's folder and the
    # module written there, on sys.path), made again by the worker's own uid.
    template = next(t for t in forked._templates.values() if t.alive and t.kind == kind)
    assert sorted(said["tmp"]) == sorted(template.info["tmp_left"])
    assert set(said["tmp"].values()) <= {uid}
    assert_nothing_left(outcome)


def test_the_torch_template_starts_nothing_a_fork_would_lose(sandbox: SandboxHarness) -> None:
    if (missing := kind_problem("torch")) is not None:
        pytest.skip(missing)
    limits = exhibit_limits("pjrt_registry", sandbox.limits)
    if (problem := zygote_problem("torch", limits)) is not None:
        pytest.skip(f"workers are not forked here: {problem}")
    jax = forked.template_for(worker_env(kind="jax"), "jax").info
    torch = forked.template_for(worker_env(kind="torch"), "torch").info
    # No thread beyond the JAX template's (the main one and OpenBLAS's pool, made fork-safe
    # by its atfork handlers): torch_xla makes its PJRT client (and its threads) at the first
    # device use, in the child's run; the template refuses to start if one exists.
    assert torch["threads"] <= jax["threads"], (torch, jax)
    assert torch["torch_xla_version"] and torch["probe_errors"] == sum(
        e.worker != "torch" for e in EXHIBITS.values()
    )
    # torch's import mapped what a smaller RLIMIT_AS would have refused: below this floor a
    # torch worker is a bwrap start (forked.zygote_problem).
    assert 0 < torch["vm_bytes"] < forked.TORCH_FORK_MIN_ADDRESS_SPACE
    # A forked torch worker creates its own client, with its run's settings: two devices here.
    outcome = run(sandbox, "import os\nos.environ['CPU_NUM_DEVICES'] = '2'\n", "torch")
    outcome.finished()
    tried = next(e for e in outcome.events if getattr(e, "type", "") == "pjrt_client_tried")
    assert getattr(tried, "device_count", None) == 2, tried


# What a run finds of its process beyond its own code: the environment, the limits, the signal
# dispositions, torch's thread settings, the import path. A forked torch worker must find what a
# bwrap-started one finds (design 0053: torch_xla reads its settings at client creation, in the
# run; what its import read, it read in both under the same environment).
STATE = """import json, os, resource, signal, sys, threading
import torch
LIMITS = [n for n in dir(resource) if n.startswith('RLIMIT_')]
HANDLERS = {}
for s in signal.valid_signals():
    try:
        h = signal.getsignal(s)
    except (OSError, ValueError):
        continue
    HANDLERS[str(int(s))] = h if isinstance(h, int) else getattr(h, '__qualname__', repr(h))
print(json.dumps({
    'environ': dict(os.environ),
    'limits': {n: resource.getrlimit(getattr(resource, n)) for n in LIMITS},
    'signals': HANDLERS,
    'threads': [torch.get_num_threads(), torch.get_num_interop_threads()],
    'affinity': sorted(os.sched_getaffinity(0)),
    'cwd': os.getcwd(),
    'umask': os.umask(0o022),
    'path': sys.path,
    'python_threads': sorted(t.name for t in threading.enumerate()),
    'recursion': sys.getrecursionlimit(),
    'uid0': os.getuid() == 0,
}))
pjrt_device = 'CPU'
"""


def _normalised(outcome: Outcome) -> dict[str, object]:
    said: dict[str, object] = json.loads(outcome.printed)
    environ = said["environ"]
    assert isinstance(environ, dict)
    # The worker's name: per uid in a forked worker (zygote._worker), the kind's in a started one.
    environ.pop("USER")
    environ.pop("LOGNAME")
    # The CPU limit is the CPU used so far plus the run's budget (guard.set_cpu_budget): a
    # started worker's includes its ~6 s of imports, a forked one's does not; the budget is
    # the same.
    limits = said["limits"]
    assert isinstance(limits, dict)
    limits.pop("RLIMIT_CPU")
    # torch's instantiator folder has a random name, on sys.path in both.
    path = said["path"]
    assert isinstance(path, list)
    said["path"] = ["/tmp/tmp*" if p.startswith("/tmp/tmp") else p for p in path]
    tried = next(e for e in outcome.events if getattr(e, "type", "") == "pjrt_client_tried")
    said["client"] = tried.model_dump(exclude={"seq", "run_id", "init_seconds"})
    return said


@pytest.mark.full  # a bwrap-started torch worker: ~7 CPU-s of imports; make test-all
def test_a_forked_torch_worker_finds_what_a_started_one_finds(sandbox: SandboxHarness) -> None:
    if (missing := kind_problem("torch")) is not None:
        pytest.skip(missing)
    if problem := zygote_problem("torch", exhibit_limits("pjrt_registry", sandbox.limits)):
        pytest.skip(f"workers are not forked here: {problem}")
    forked_run = run(sandbox, STATE, "torch")
    forked_run.finished()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(forked.ENV_SWITCH, "0")
        started = SandboxHarness(sandbox.limits, size=0)
        try:
            started_run = run_in(started, STATE, exhibit="pjrt_registry", timeout=300.0)
        finally:
            started.close()
    started_run.finished()
    mine, theirs = _normalised(forked_run), _normalised(started_run)
    assert mine == theirs
    assert mine["uid0"] is False
