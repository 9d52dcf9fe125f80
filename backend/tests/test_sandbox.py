"""The sandbox through the real supervisor: success, every failure kind, limits and recovery."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jaxscope.protocol import (
    JaxprStaged,
    RunFailed,
    RunFinished,
    RunOptions,
    RunRequest,
    RunStarted,
    StageTimed,
    StdoutPrinted,
)
from jaxscope.sandbox.session import Session
from jaxscope.settings import Limits

from exhibits.tracing.events import JitCalled
from tests.harness import CASES, SandboxHarness, assert_one_terminal

SIN = """\
import jax.numpy as jnp

def f(x):
    print("tracing f")
    return jnp.sin(x) * 2.0

args = (jnp.ones(3),)
"""


def failed(events: list) -> RunFailed:  # type: ignore[type-arg]
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, RunFailed), terminal
    return terminal


def test_tracing_run_streams_real_jaxpr(sandbox: SandboxHarness) -> None:
    events = sandbox.run(SIN)
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, RunFinished)
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.jax_version == jax.__version__
    assert started.cpu_device_count == 8  # --xla_force_host_platform_device_count=8
    staged = [e for e in events if isinstance(e, JaxprStaged)]
    assert staged
    ns: dict[str, Any] = {}
    exec(SIN, ns)
    expected = str(jax.make_jaxpr(ns["f"])(jnp.ones(3)))
    assert staged[-1].jaxpr.text == expected
    printed = [e for e in events if isinstance(e, StdoutPrinted)]
    # Printed while tracing; the probe's later jit calls may trace (and print) again.
    assert (printed[0].text, printed[0].stage) == ("tracing f\n", "trace")
    assert all(p.text == "tracing f\n" and p.stage in ("trace", "call") for p in printed)


def test_syntax_error_has_line_and_column(sandbox: SandboxHarness) -> None:
    code = "def f(x):\n    return x +* 2\nargs = (1.0,)\n"
    f = failed(sandbox.run(code))
    assert f.kind == "syntax"
    assert f.error_class == "SyntaxError"
    assert f.source is not None and f.source.line == 2
    try:
        compile(code, "<snippet>", "exec")
    except SyntaxError as exc:
        assert exc.offset is not None
        assert f.source.column == exc.offset - 1
    assert f.stage == "load"


def test_missing_f_is_invalid_snippet(sandbox: SandboxHarness) -> None:
    f = failed(sandbox.run("import jax.numpy as jnp\nargs = (jnp.ones(3),)\n"))
    assert f.kind == "invalid_snippet"
    assert "`f`" in f.message


def test_user_exception_reports_only_user_frames(sandbox: SandboxHarness) -> None:
    code = (
        "import jax.numpy as jnp\n"
        "def helper(x):\n"
        "    raise ValueError('bad value ' + str(x.shape))\n"
        "def f(x):\n"
        "    return helper(x) + 1\n"
        "args = (jnp.ones(3),)\n"
    )
    f = failed(sandbox.run(code))
    assert f.kind == "user_exception"
    assert f.error_class == "ValueError"
    assert f.message == "bad value (3,)"
    assert [(fr.line, fr.function) for fr in f.traceback] == [(5, "f"), (3, "helper")]
    assert f.traceback[-1].text == "raise ValueError('bad value ' + str(x.shape))"
    assert f.source is not None and f.source.line == 3


def test_c01_tracer_error(sandbox: SandboxHarness) -> None:
    expect = json.loads((CASES / "C01_escape_jit_broken.expect.json").read_text())
    f = failed(sandbox.run((CASES / "C01_escape_jit_broken.py").read_text()))
    assert f.kind == "tracer_error"
    assert f.error_class == expect["error_class"] == "TracerBoolConversionError"
    assert f.message.startswith(expect["error_first_line"])
    assert f.source is not None and f.source.line == expect["error_user_line"] == 9
    assert f.fix is not None and "jnp.where" in f.fix and "lax.cond" in f.fix
    assert f.explanation


@pytest.mark.parametrize(
    ("body", "error_class", "needle"),
    [
        ("import subprocess\nsubprocess.run(['ls'])", "PermissionError", "subprocess"),
        ("import os\nos.system('true')", "PermissionError", "os.system"),
        (
            "import socket\nsocket.create_connection(('127.0.0.1', 9))",
            "PermissionError",
            "network",
        ),
    ],
)
def test_process_and_network_refused(
    sandbox: SandboxHarness, body: str, error_class: str, needle: str
) -> None:
    session = sandbox.session()
    try:
        code = body + "\ndef f(x):\n    return x\nargs = (1.0,)\n"
        f = failed(sandbox.run(code, session=session))
        assert f.kind == "user_exception"
        assert f.error_class == error_class
        assert f.message.startswith("jaxscope's sandbox does not allow")
        assert needle in f.message
        # The session's next run works, in a fresh worker.
        first = session.last_worker
        ok = assert_one_terminal(sandbox.run(SIN, session=session))
        assert isinstance(ok, RunFinished)
        assert first is not None and session.last_worker not in (None, first)
    finally:
        sandbox.call(session.close())


def test_infinite_loop_times_out_and_next_run_works(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    try:
        t0 = time.monotonic()
        f = failed(sandbox.run("x = 0\nwhile True:\n    x += 1\n", session=session, wall_s=1.5))
        elapsed = time.monotonic() - t0
        assert f.kind == "timeout"
        assert "wall-clock" in f.message
        # The supervisor asked the worker where it was (faulthandler dump) before killing it.
        assert f.source is not None and f.source.line in (2, 3)
        assert f"it was running line {f.source.line}" in f.message
        # at the limit, not before; the bound above it only says 'not hung' (it counts the
        # worker's start, over 3 s beside a second test process)
        assert 1.4 < elapsed < 10.0
        assert session.worker is None  # killed, to be replaced
        ok = assert_one_terminal(sandbox.run(SIN, session=session))
        assert isinstance(ok, RunFinished)
    finally:
        sandbox.call(session.close())


def test_cpu_limit_ends_with_timeout() -> None:
    harness = SandboxHarness(Limits(wall_s=20.0, cpu_s=1.0), size=0)
    try:
        t0 = time.monotonic()
        f = failed(harness.run("def spin():\n    while True:\n        pass\n\nspin()\n"))
        assert f.kind == "timeout"
        assert "CPU-time limit" in f.message
        assert f.source is not None and f.source.function == "spin" and f.source.line in (2, 3)
        assert time.monotonic() - t0 < 15.0
    finally:
        harness.close()


@pytest.mark.parametrize(
    "code",
    [
        "x = bytearray(8 * 2**30)\n",
        "import jax.numpy as jnp\nx = jnp.ones((1 << 31,))\nx.block_until_ready()\n",
    ],
    ids=["bytearray", "jnp_ones"],
)
def test_memory_bomb(sandbox: SandboxHarness, code: str) -> None:
    f = failed(sandbox.run(code))
    assert f.kind == "memory", f


BAD_ALLOC_DEATH = """\
import os
import sys

import jax.numpy as jnp


def f(x):
    # what XLA's compile does when it runs out of memory: C++ terminate on std::bad_alloc
    sys.stderr.write("terminate called after throwing an instance of 'std::bad_alloc'\\n")
    sys.stderr.write("  what():  std::bad_alloc\\n")
    sys.stderr.flush()
    os.abort()


args = (jnp.ones(3),)
"""


def test_a_worker_dead_of_memory_is_told_what_to_try(sandbox: SandboxHarness) -> None:
    """Break-it review: a worker that died of std::bad_alloc (a compile of six nested jits)
    ended kind memory with no explanation and no fix, not even the --memory-gib flag."""
    f = failed(sandbox.run(BAD_ALLOC_DEATH))
    assert f.kind == "memory" and "std::bad_alloc" in f.message, f
    assert f.explanation is not None and "address-space limit" in f.explanation
    assert f.fix is not None and "--memory-gib" in f.fix and "part of it" in f.fix


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("import os\nos._exit(3)\n", "exited with code 3 (it was running line 2, in <module>)"),
        (
            "import ctypes\nctypes.string_at(0)\n",
            "killed by SIGSEGV (it was running line 2, in <module>)",
        ),
        ("import os\nos.abort()\n", "killed by SIGABRT (it was running line 2, in <module>)"),
    ],
    ids=["os_exit", "segfault", "abort"],
)
def test_worker_death_is_worker_crashed(sandbox: SandboxHarness, code: str, needle: str) -> None:
    f = failed(sandbox.run(code))
    assert f.kind == "worker_crashed"
    assert needle in f.message


# f exits the worker on its second trace: the caches exhibit's persistent preset traces it twice,
# and JAX logs "Writing jit_f to persistent compilation cache ..." to stderr in between.
EXIT_ON_SECOND_CALL = """import os
import jax.numpy as jnp
calls = []
def f(x):
    calls.append(1)
    if len(calls) == 2:
        os._exit(3)
    return jnp.sin(x) * 2
args = (jnp.ones(3),)
"""


def test_worker_exit_names_the_line_not_a_log_line(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    events: list[Any] = []

    async def emit(event: Any) -> None:
        events.append(event)

    request = RunRequest(
        run_id="exit-1",
        exhibit="caches",
        code=EXIT_ON_SECOND_CALL,
        options=RunOptions(preset="persistent"),
    )
    try:
        sandbox.call(session.run(request, emit, wall_s=60))
    finally:
        sandbox.call(session.close())
    f = failed(events)
    assert f.kind == "worker_crashed"
    # The line that called os._exit (named from the stack the worker wrote as it exited), and
    # no log line of JAX's presented as the cause.
    assert f.message == "the worker process exited with code 3 (it was running line 7, in f)"
    assert f.source is not None and (f.source.line, f.source.function) == (7, "f")
    assert EXIT_ON_SECOND_CALL.splitlines()[6].strip() == "os._exit(3)"


def test_garbage_on_event_pipe_is_invalid_event(sandbox: SandboxHarness) -> None:
    # The runner keeps the event fd private (no module global); a snippet can still find it
    # as a pipe that is not stderr, and the supervisor must reject garbage.
    code = (
        "import os, stat\n"
        "err = os.fstat(2).st_ino\n"
        "for name in os.listdir('/proc/self/fd'):\n"
        "    fd = int(name)\n"
        "    try:\n"
        "        st = os.fstat(fd)\n"
        "    except OSError:\n"
        "        continue\n"
        "    if fd > 2 and stat.S_ISFIFO(st.st_mode) and st.st_ino != err:\n"
        "        try:\n"
        "            os.write(fd, b'{not an event}\\n')  # the job pipe's read end: EBADF\n"
        "        except OSError:\n"
        "            pass\n"
    )
    f = failed(sandbox.run(code))
    assert f.kind == "invalid_event"
    assert "not a protocol event" in f.message


def test_cancel(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    cancelled_at: list[float] = []

    async def scenario() -> list:  # type: ignore[type-arg]
        task = asyncio.ensure_future(
            sandbox.arun(session, "while True:\n    pass\n", run_id="to-cancel")
        )
        await asyncio.sleep(0.5)
        while session.worker is None:  # wait until the run is on a worker
            await asyncio.sleep(0.05)
        assert session.cancel("other-run") is False
        cancelled_at.append(time.monotonic())
        assert session.cancel("to-cancel") is True
        return await task

    try:
        f = failed(sandbox.call(scenario()))
        assert f.kind == "cancelled"
        # from Cancel to the run's end: the worker is killed, not waited for (a worker's start
        # before it is not counted: beside a second test process it alone took over 3 s)
        assert time.monotonic() - cancelled_at[0] < 3.0
    finally:
        sandbox.call(session.close())


def test_concurrent_sessions_isolated(sandbox: SandboxHarness) -> None:
    looping, normal = sandbox.session(), sandbox.session()

    async def scenario() -> tuple[list, list, float]:  # type: ignore[type-arg]
        loop_task = asyncio.ensure_future(
            sandbox.arun(looping, "while True:\n    pass\n", wall_s=6.0)
        )
        ok = await sandbox.arun(normal, SIN)
        finished_at = time.monotonic()
        return await loop_task, ok, finished_at

    try:
        t0 = time.monotonic()
        looped, ok, ok_at = sandbox.call(scenario())
        assert failed(looped).kind == "timeout"
        assert isinstance(assert_one_terminal(ok), RunFinished)
        assert ok_at - t0 < 6.0  # the normal session did not wait for the looping one
        assert looping.worker is None and normal.worker is None  # each worker served one run
    finally:
        sandbox.call(looping.close())
        sandbox.call(normal.close())


def test_every_run_gets_a_fresh_worker(sandbox: SandboxHarness) -> None:
    """A worker serves one run: nothing a run defines reaches the next, of another session or
    of the same one."""
    a, b = sandbox.session(), sandbox.session()
    try:
        sandbox.run("import builtins\nbuiltins.SECRET = 42\n" + SIN, session=a)
        first = a.last_worker
        assert first is not None and not first.alive and a.worker is None
        reads = "def f(x):\n    return x\nargs = (SECRET,)\n"
        for session in (a, b):
            f = failed(sandbox.run(reads, session=session))
            assert f.kind == "user_exception" and f.error_class == "NameError"
            assert session.last_worker not in (None, first)
    finally:
        sandbox.call(a.close())
        sandbox.call(b.close())


@pytest.mark.parametrize(
    "damage",
    [
        'jax.config.update("jax_enable_x64", True)',
        "jax.numpy.ones = None",
        'os.chdir("/")',
    ],
    ids=["config", "monkeypatch", "cwd"],
)
def test_a_run_that_changes_global_state_does_not_leak_into_the_next(
    sandbox: SandboxHarness, damage: str
) -> None:
    """A snippet that changes jax.config, a jax module or the cwd: the session's next run gets a
    fresh worker and JAX's defaults (f32, not f64)."""
    session = sandbox.session()
    try:
        sandbox.run(f"import os\nimport jax\n{damage}\n" + SIN, session=session)
        first = session.last_worker
        events = sandbox.run(SIN, session=session)
        staged = [e for e in events if isinstance(e, JaxprStaged)]
        assert staged and "f32[" in staged[-1].jaxpr.text and "f64" not in staged[-1].jaxpr.text
        assert session.last_worker not in (None, first)
    finally:
        sandbox.call(session.close())


@pytest.mark.parametrize(
    ("code", "exhibit", "needle"),
    [
        ("x" * (10 * 2**20), "tracing", "at most"),
        (SIN, "no_such_exhibit", "unknown exhibit"),
    ],
    ids=["10MB_paste", "unknown_exhibit"],
)
def test_invalid_request_never_reaches_a_worker(
    sandbox: SandboxHarness, code: str, exhibit: str, needle: str
) -> None:
    session: Session = sandbox.session()
    before = sandbox.pool.handed_out
    f = failed(sandbox.run(code, exhibit=exhibit, session=session))
    assert f.kind == "invalid_request"
    assert needle in f.message
    assert sandbox.pool.handed_out == before
    assert session.worker is None
    ok = assert_one_terminal(sandbox.run(SIN, session=session))
    assert isinstance(ok, RunFinished)
    sandbox.call(session.close())


def test_unprintable_and_huge_exceptions(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    try:
        code = (
            "class Weird(Exception):\n"
            "    def __str__(self):\n"
            "        raise RuntimeError('no')\n"
            "raise Weird()\n"
        )
        f = failed(sandbox.run(code, session=session))
        assert (f.kind, f.error_class) == ("user_exception", "Weird")
        # it still points at the line that raised it (a break-it review: source was null)
        assert f.source is not None and f.source.line == 4
        assert [fr.line for fr in f.traceback] == [4] and f.traceback[0].text == "raise Weird()"
        f = failed(sandbox.run("raise ValueError('x' * 10**6)\n", session=session))
        assert f.kind == "user_exception" and len(f.message) < 25_000
        assert f.message.endswith("(truncated)")
        # sys.exit in the snippet is an ordinary user exception, not a crash of the worker.
        f = failed(sandbox.run("import sys\nsys.exit(4)\n", session=session))
        assert (f.kind, f.error_class) == ("user_exception", "SystemExit")
    finally:
        sandbox.call(session.close())


def test_rerun_in_session_still_traces_lowers_and_compiles(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    try:
        for _ in range(2):
            events = sandbox.run(SIN, exhibit="stations", session=session)
            assert isinstance(assert_one_terminal(events), RunFinished)
            timed = {e.event for e in events if isinstance(e, StageTimed)}
            assert "/jax/core/compile/backend_compile_duration" in timed
            assert any(e.type == "eqn_recorded" for e in events)
            events = sandbox.run(SIN, exhibit="tracing", session=session)
            calls = [e for e in events if isinstance(e, JitCalled)]
            assert calls and calls[0].traced
    finally:
        sandbox.call(session.close())


def test_cold_pool_first_run_waits_for_warming_worker() -> None:
    harness = SandboxHarness(Limits(), size=1)
    try:
        assert harness.pool.state()["starting"] == 1  # warming began at start()
        t0 = time.monotonic()
        ok = assert_one_terminal(harness.run(SIN))
        assert isinstance(ok, RunFinished)
        assert time.monotonic() - t0 < 10.0
        state = harness.pool.state()
        assert state["handed_out"] == 1
        assert state["spawned"] == 2  # the first worker, and its replacement
        assert state["idle"] + state["starting"] == 1
    finally:
        harness.close()


def test_a_bad_static_setting_fails_at_its_line_in_the_worker(sandbox: SandboxHarness) -> None:
    code = (
        "import jax.numpy as jnp\n"
        "def f(x, mode):\n"
        "    return x * mode\n"
        "args = (jnp.ones(3), 2)\n"
        "static_argnums = (5,)\n"
    )
    f = failed(sandbox.run(code, exhibit="stations"))
    assert (f.kind, f.error_class, f.stage) == ("user_exception", "ValueError", "load")
    assert f.message.startswith("Jitted function has static_argnums=(5,)")
    assert f.source is not None and f.source.line == 5 and f.explanation is None
