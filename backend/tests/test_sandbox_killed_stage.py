"""A run the supervisor kills (wall-clock or CPU-time limit) says in which stage it was: the
last ``stage_started`` the worker sent (break-it review s11: timeouts carried ``stage: null``)."""

from __future__ import annotations

from jaxscope.protocol import RunFailed, RunFinished, StageStarted
from jaxscope.settings import Limits

from tests.harness import SandboxHarness, assert_one_terminal

QUICK = "def f(x):\n    return x\n\nargs = (1.0,)\n"

SLEEPS_WHILE_TRACED = """\
import time

def f(x):
    time.sleep(60)
    return x

args = (1.0,)
"""

SPINS_WHILE_TRACED = """\
def f(x):
    while True:
        pass

args = (1.0,)
"""


def killed(events: list) -> tuple[RunFailed, str]:  # type: ignore[type-arg]
    """The terminal event and the stage of the last ``stage_started`` before it."""
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, RunFailed), terminal
    stages = [e.stage for e in events if isinstance(e, StageStarted)]
    assert stages
    return terminal, stages[-1]


def test_wall_clock_timeout_names_the_stage(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    try:
        # A first run takes the session's worker (the short wall_s below bounds the wait too).
        assert isinstance(assert_one_terminal(sandbox.run(QUICK, session=session)), RunFinished)
        f, last = killed(sandbox.run(SLEEPS_WHILE_TRACED, session=session, wall_s=1.5))
        assert f.kind == "timeout" and "wall-clock" in f.message
        assert last == "trace" and f.stage == "trace"
        assert f.source is not None and f.source.line == 4  # time.sleep(60)
    finally:
        sandbox.call(session.close())


def test_cpu_limit_timeout_names_the_stage() -> None:
    harness = SandboxHarness(Limits(wall_s=20.0, cpu_s=1.0), size=0)
    try:
        f, last = killed(harness.run(SPINS_WHILE_TRACED))
        assert f.kind == "timeout" and "CPU-time limit" in f.message
        assert last == "trace" and f.stage == "trace"
    finally:
        harness.close()
