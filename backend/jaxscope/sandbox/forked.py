"""Workers forked from a warm template (the supervisor's side of ``sandbox/zygote.py``).

:func:`start_forked` gives an :class:`ForkedProcess`, which :class:`~jaxscope.sandbox.worker.
WorkerProcess` uses exactly as it uses the ``asyncio.subprocess.Process`` of a bwrap-started
worker (``pid``, ``returncode``, ``stdin``, ``stdout``, ``stderr``, ``wait()``): ``pid`` is the
helper's (a process group leader: ``killpg`` ends the helper, the namespace's init and the
worker), and the worker is the helper's grandchild, as under bwrap.

One :class:`Template` per worker environment lives as long as this process (one per server, one
per test process): started on the first fork, in a thread (it costs the ~1.5 CPU-s of a worker
start once), and again after it died. Its control socket is driven with blocking calls under a
lock, from threads, and one reader thread per template turns its messages into
``concurrent.futures.Future`` s, so that any event loop (a server's, each test's own) can await
them. Design 0053.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from jaxscope.sandbox.kinds import module_command, python_of, venv_paths
from jaxscope.sandbox.namespaces import bwrap_argv, readonly_paths
from jaxscope.settings import GiB, Limits

if TYPE_CHECKING:  # annotations only: `jaxscope serve` imports this before the protocol
    import asyncio

    from jaxscope.protocol import WorkerKind

log = logging.getLogger(__name__)

# Seconds a template may take to import JAX and the probes (a loaded 2-core machine: ~10 s).
TEMPLATE_START_S = 120.0
# Seconds a fork request may take to be answered.
FORK_ANSWER_S = 30.0
# The environment variable that turns templates off (``0``): every worker is a bwrap start.
ENV_SWITCH = "JAXSCOPE_ZYGOTE"
# The environment variable that turns off a JAX template's tracing of the shipped examples
# between requests (``0``; design 0076): the test suite's processes start many short-lived
# templates and pay for it in CPU, while its own test turns it on.
WARM_SWITCH = "JAXSCOPE_TEMPLATE_WARM"
# The exit status reported for a child whose template died (its helper died with it).
LOST_STATUS = -9
# The worker kinds that are forked from a template (design 0053); the others start by bwrap.
FORKED_KINDS: tuple[WorkerKind, ...] = ("jax", "torch")
# The least address space (``Limits.address_space_bytes``) a forked torch worker may have: its
# template has already mapped torch's ~5 GB (PyPI's build loads its CUDA libraries; VmSize
# measured after the preload: 5.5 GB), which a smaller RLIMIT_AS, set in the child after the
# import, would not stop. Below it a torch worker is a bwrap start, whose import then fails as
# before ("failed to map segment").
TORCH_FORK_MIN_ADDRESS_SPACE = 6 * GiB


class TemplateError(RuntimeError):
    """The template could not be started, or did not answer a fork."""


def zygote_problem(kind: str, limits: Limits) -> str | None:
    """Why workers of ``kind`` with ``limits`` are started by bubblewrap rather than forked from
    a template (None: they are forked). Forking needs a JAX or torch worker, namespaces, root
    (the template makes each child's namespaces and uid; without root they are bwrap starts, as
    in the non-root container), no bound path under ``/tmp`` (each child mounts its own
    ``/tmp`` over it) and, for torch, an address space of at least
    :data:`TORCH_FORK_MIN_ADDRESS_SPACE` (or none)."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return f"{ENV_SWITCH}=0"
    if kind not in FORKED_KINDS:
        return f"a {kind} worker is started by bubblewrap (design 0053)"
    if not limits.namespaces:
        return "without namespaces (--unsafe-no-sandbox) workers are started one by one"
    if os.geteuid() != 0:
        return "forking needs root, to make each worker's namespaces and switch its uid"
    if any(p == "/tmp" or p.startswith("/tmp/") for p in _template_paths(kind)):
        return "the venv or packages lie under /tmp, which each forked worker replaces"
    if kind == "torch" and 0 < limits.address_space_bytes < TORCH_FORK_MIN_ADDRESS_SPACE:
        return (
            f"a torch worker's address space ({limits.address_space_bytes} bytes) is below what "
            "its template has mapped already; it is started by bubblewrap"
        )
    return None


def _template_paths(kind: WorkerKind) -> tuple[str, ...]:
    """What a template of ``kind`` binds read-only: the workers' paths and, for torch, its
    venv and base Python (``kinds.venv_paths``)."""
    return (*readonly_paths(), *_extra_paths(kind))


def _extra_paths(kind: WorkerKind) -> tuple[str, ...]:
    return venv_paths(python_of(kind)) if kind == "torch" else ()


class Template:
    """One running template process and its control socket."""

    def __init__(self, env: dict[str, str], kind: WorkerKind = "jax") -> None:
        self.env = env
        self.kind = kind
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [
            *module_command(kind, "jaxscope.sandbox.zygote"),
            "--ctl",
            str(theirs.fileno()),
            "--kind",
            kind,
            *(["--warm"] if warm_traces() else []),
        ]
        argv = bwrap_argv(
            command, uid=None, tmp_bytes=2**20, extra_paths=_extra_paths(kind), template=True
        )
        self._proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            cwd="/",
            env=env,
            start_new_session=True,
        )
        theirs.close()
        self._ctl = ours
        self._ids = itertools.count(1)
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._answers: dict[int, concurrent.futures.Future[dict[str, Any]]] = {}
        self._exits: dict[int, concurrent.futures.Future[int]] = {}
        self._dead = False
        # The thread that started it (the launcher): bwrap's parent-death signal follows it.
        self._launcher = threading.current_thread()
        self.info: dict[str, Any] = {}
        # What the template's idle work did, once done (``zygote._serve``: outcome counts and
        # its CPU seconds; a JAX template's probe imports and example traces, design 0076).
        self.idle: dict[str, Any] | None = None
        self._idle_done = threading.Event()
        ours.settimeout(TEMPLATE_START_S)
        try:
            first = ours.recv(65536)
            self.info = json.loads(first) if first else {}
        except (OSError, ValueError) as exc:
            self.close()
            raise TemplateError(f"the worker template did not start ({exc})") from exc
        if self.info.get("ready") is not True:
            self.close()
            raise TemplateError(f"the worker template did not start (said {first[:200]!r})")
        ours.settimeout(None)
        self._reader = threading.Thread(target=self._read, name="jaxscope-template", daemon=True)
        self._reader.start()
        log.info("worker template %d ready (%d threads)", self._proc.pid, self.info["threads"])

    def wait_idle(self, timeout: float) -> dict[str, Any] | None:
        """Blocking: :attr:`idle` once the template's idle work is done, None after ``timeout``
        seconds (a torch template has none: it says so at once)."""
        self._idle_done.wait(timeout)
        return self.idle

    @property
    def alive(self) -> bool:
        return not self._dead and self._proc.poll() is None

    @property
    def pid(self) -> int:
        """The host pid of the template's ``bwrap`` (the template's Python is its child)."""
        return self._proc.pid

    def _read(self) -> None:
        try:
            self._read_messages()
        except Exception:
            log.exception("worker template %d: a message could not be read", self._proc.pid)
        # An expected end: close() was called, or the thread that started the template ended
        # (this process is exiting: concurrent.futures joins the launcher before atexit's
        # close_templates runs, and bwrap's parent-death signal kills the template first).
        closed = self._dead or not self._launcher.is_alive()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(2.0)
        log.log(
            logging.INFO if closed else logging.WARNING,
            "worker template %d ended (status %s)",
            self._proc.pid,
            self._proc.poll(),
        )
        with self._lock:
            self._dead = True
            for answer in self._answers.values():
                if not answer.done():
                    answer.set_exception(TemplateError("the worker template died"))
            self._answers.clear()
            for ended in self._exits.values():
                if not ended.done():
                    ended.set_result(LOST_STATUS)

    def _read_messages(self) -> None:
        while True:
            try:
                data = self._ctl.recv(65536)
            except OSError:
                return
            if not data:
                return
            message = json.loads(data)
            with self._lock:
                if "idle_done" in message:
                    self.idle = message
                    self._idle_done.set()
                    log.info("worker template %d idle work done: %s", self._proc.pid, message)
                elif "exit" in message:
                    ended = self._exit_future(int(message["exit"]))
                    if not ended.done():
                        ended.set_result(int(message["status"]))
                elif (answer := self._answers.pop(message.get("id") or 0, None)) is not None:
                    answer.set_result(message)

    def _exit_future(self, pid: int) -> concurrent.futures.Future[int]:
        ended = self._exits.get(pid)
        if ended is None:
            ended = self._exits[pid] = concurrent.futures.Future()
            if self._dead:
                ended.set_result(LOST_STATUS)
        return ended

    def exit_of(self, pid: int) -> concurrent.futures.Future[int]:
        """Resolves to the exit status of child ``pid`` (``subprocess``'s convention)."""
        with self._lock:
            return self._exit_future(pid)

    def forget(self, pid: int) -> None:
        """Drop what is kept of child ``pid`` (after its end was read)."""
        with self._lock:
            self._exits.pop(pid, None)

    def fork(self, request: dict[str, Any], fds: tuple[int, int, int]) -> int:
        """Blocking: fork a worker for ``request`` with ``fds`` as its stdin, stdout and stderr;
        returns the helper's host pid. Raises :class:`TemplateError`."""
        answer: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        with self._lock:
            if self._dead:
                raise TemplateError("the worker template died")
            request_id = next(self._ids)
            self._answers[request_id] = answer
        payload = json.dumps({**request, "id": request_id}).encode()
        try:
            with self._send_lock:
                socket.send_fds(self._ctl, [payload], list(fds))
            message = answer.result(FORK_ANSWER_S)
        except (OSError, concurrent.futures.TimeoutError) as exc:
            with self._lock:
                self._answers.pop(request_id, None)
            raise TemplateError(f"the worker template did not fork ({exc})") from exc
        if "pid" not in message:
            raise TemplateError(f"the worker template could not fork: {message.get('error')}")
        pid = int(message["pid"])
        # Make the future now, so that an exit reported before anyone asks is kept.
        self.exit_of(pid)
        return pid

    def close(self) -> None:
        """Stop the template (its children die with it)."""
        self._dead = True
        with contextlib.suppress(OSError):
            self._ctl.close()
        # The template's Python, then its bwrap. bwrap may leave its child unreaped: re-parented
        # to this process (a child subreaper, namespaces.become_subreaper) it would stay a
        # zombie here, so it is reaped by its pid, which is this template's and no one else's.
        python: list[int] = []
        with contextlib.suppress(OSError, ValueError):
            with open(f"/proc/{self._proc.pid}/task/{self._proc.pid}/children") as children:
                python = [int(pid) for pid in children.read().split()]
        for pid in python:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        for pid in python:
            _reap_if_ours(pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(5)


def _reap_if_ours(pid: int, timeout_s: float = 1.0) -> None:
    """Reap ``pid`` if it is (or within ``timeout_s`` becomes) a child of this process; nothing
    when it is not (another process reaped it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                return
        except ChildProcessError:
            if not os.path.exists(f"/proc/{pid}"):
                return
        time.sleep(0.02)


# Templates are started from this one thread, which lives as long as the process: bubblewrap's
# --die-with-parent is a parent-death signal, which Linux sends when the *thread* that started
# it ends (an event loop's executor thread ends with its loop: every test's own loop).
_LAUNCHER = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="jaxscope-templates")
_templates: dict[tuple[WorkerKind, bool, tuple[tuple[str, str], ...]], Template] = {}
_templates_lock = threading.Lock()


def warm_traces() -> bool:
    """Whether a JAX template traces the shipped examples between requests (:data:`WARM_SWITCH`,
    default on)."""
    return os.environ.get(WARM_SWITCH, "1") != "0"


def template_for(env: dict[str, str], kind: WorkerKind = "jax") -> Template:
    """Blocking: the live template for workers of ``kind`` with environment ``env`` (and this
    process's :func:`warm_traces`), started if needed."""
    key = (kind, warm_traces(), tuple(sorted(env.items())))
    with _templates_lock:
        template = _templates.get(key)
        if template is not None and template.alive:
            return template
        if template is not None:
            template.close()
        template = _templates[key] = _LAUNCHER.submit(Template, env, kind).result()
        return template


def template_pids(kind: WorkerKind | None = None) -> list[int]:
    """Host pids of this process's live templates (of ``kind``, or all) (tests; the ``bwrap``
    that runs each one's Python: its child)."""
    with _templates_lock:
        return [t.pid for t in _templates.values() if t.alive and (kind is None or t.kind == kind)]


def close_templates(kind: WorkerKind | None = None) -> None:
    """Stop every template of this process (of ``kind``, or all) and reap it (also at this
    process's exit: killed with it through bwrap's ``--die-with-parent`` instead, the
    template's Python would be re-parented to the nearest child subreaper above, a test process
    or a supervisor, and stay a zombie there)."""
    with _templates_lock:
        for key, template in list(_templates.items()):
            if kind is None or template.kind == kind:
                template.close()
                del _templates[key]


atexit.register(close_templates)


class ForkedProcess:
    """A forked worker, with the parts of ``asyncio.subprocess.Process`` the supervisor uses."""

    def __init__(
        self,
        template: Template,
        pid: int,
        stdin: asyncio.StreamWriter,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
    ) -> None:
        self._template = template
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self._ended = template.exit_of(pid)

    @property
    def returncode(self) -> int | None:
        return self._ended.result() if self._ended.done() else None

    async def wait(self) -> int:
        import asyncio

        if not self._ended.done():
            # Not asyncio.wrap_future: cancelling its wrapper (a wait_for's timeout) would
            # cancel the shared future itself, and every later wait with it.
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()

            def wake(waiter: asyncio.Future[None] = waiter) -> None:
                if not waiter.done():
                    waiter.set_result(None)

            def ended(_: object) -> None:
                with contextlib.suppress(RuntimeError):  # the loop was closed meanwhile
                    loop.call_soon_threadsafe(wake)

            self._ended.add_done_callback(ended)
            await waiter
        code = self._ended.result()
        self._template.forget(self.pid)
        with contextlib.suppress(Exception):
            self.stdin.close()
        return code


async def start_forked(
    limits: Limits,
    env: dict[str, str],
    uid: int | None,
    stream_limit: int,
    kind: WorkerKind = "jax",
) -> ForkedProcess:
    """Fork a worker of ``kind`` with ``limits`` from the template for ``env``, as ``uid`` (root
    only). ``stream_limit``: the stdout reader's line limit (bytes). Raises
    :class:`TemplateError`."""
    import asyncio

    template = await asyncio.to_thread(template_for, env, kind)
    stdin_r, stdin_w = os.pipe2(os.O_CLOEXEC)
    stdout_r, stdout_w = os.pipe2(os.O_CLOEXEC)
    stderr_r, stderr_w = os.pipe2(os.O_CLOEXEC)
    request = {"uid": uid, "tmp_bytes": limits.tmp_bytes, "limits": asdict(limits)}
    try:
        pid = await asyncio.to_thread(template.fork, request, (stdin_r, stdout_w, stderr_w))
    except BaseException:
        for fd in (stdin_w, stdout_r, stderr_r):
            os.close(fd)
        raise
    finally:
        for fd in (stdin_r, stdout_w, stderr_w):
            os.close(fd)
    loop = asyncio.get_running_loop()
    stdout = asyncio.StreamReader(limit=stream_limit, loop=loop)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stdout, loop=loop), os.fdopen(stdout_r, "rb", 0)
    )
    stderr = asyncio.StreamReader(loop=loop)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stderr, loop=loop), os.fdopen(stderr_r, "rb", 0)
    )
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop=loop), os.fdopen(stdin_w, "wb", 0)
    )
    stdin = asyncio.StreamWriter(transport, protocol, None, loop)
    return ForkedProcess(template, pid, stdin, stdout, stderr)
