"""A run's limits grow with the program it shows (issue 14: a real model is not killed at a
limit meant for snippets): ``settings.scaled_limit``, the worker's ``budget_scaled`` event, the
supervisor's later deadline, and a timeout that says what it was scaled for and what to try."""

from __future__ import annotations

import pytest
from jaxscope.protocol import BudgetScaled, JaxprStaged, RunFailed
from jaxscope.sandbox.worker import limit_help
from jaxscope.settings import SCALE_FROM_EQNS, Limits, scaled_limit

from tests.harness import SandboxHarness, assert_one_terminal

# N iterations of two eqns, then a 60 s sleep when the compiled program runs.
LARGE_THEN_SLOW = """\
import time
import jax
import jax.numpy as jnp

def f(x):
    for _ in range(N):
        x = jnp.sin(x) + x
    jax.debug.callback(lambda: time.sleep(60))
    return x

args = (jnp.ones(3),)
"""


def test_small_programs_keep_the_exhibit_limit() -> None:
    limits = Limits()
    assert scaled_limit(10.0, 3.0, SCALE_FROM_EQNS, limits) == 30.0
    assert scaled_limit(10.0, 1.0, 0, limits) == 10.0


def test_limit_grows_per_eqn_and_stops_at_the_ceiling() -> None:
    limits = Limits(per_eqn_ms=4.0, ceiling_s=120.0)
    # 10 s + 2,000 eqns × 4 ms × budget 1
    assert scaled_limit(10.0, 1.0, 2_000, limits) == pytest.approx(18.0)
    # budget 3: 30 s + 943 × 4 ms × 3
    assert scaled_limit(10.0, 3.0, 943, limits) == pytest.approx(30.0 + 943 * 0.012)
    assert scaled_limit(10.0, 1.0, 20_000, limits) == pytest.approx(90.0)
    assert scaled_limit(10.0, 1.0, 10**9, limits) == 120.0
    # a limit set longer than the ceiling (jaxscope run --timeout 300) is never cut
    assert scaled_limit(300.0, 1.0, 10**9, limits) == 300.0


def test_timeout_help_names_the_stage_and_what_to_try() -> None:
    at_compile = RunFailed(kind="timeout", message="m", stage="call")
    assert "lax.fori_loop" in (limit_help(at_compile, 20_000) or "")
    assert "20,000 eqns" in (limit_help(at_compile, 20_000) or "")
    # eager execution (stage run) compiles nothing of the whole program: no compile advice
    at_run = RunFailed(kind="timeout", message="m", stage="run")
    assert "compile" not in (limit_help(at_run, 20_000) or "")
    assert "already grew" in (limit_help(at_run, 20_000) or "")
    small = RunFailed(kind="timeout", message="m", stage="trace")
    assert "--timeout" in (limit_help(small, None) or "")
    other = RunFailed(kind="user_exception", message="m", explanation="kept")
    assert limit_help(other, 5_000) == "kept"


# `make test` runs each program of this file at a quarter of its size (past SCALE_FROM_EQNS all
# the same: the same events, deadline and message, ~6-8 s instead of ~18-26 s); `make test-all`
# also at the full size.
SIZES = [
    pytest.param(1, id="quarter"),
    pytest.param(4, id="full_size", marks=pytest.mark.full),
]


@pytest.mark.parametrize("quarters", SIZES)
def test_a_large_program_gets_a_later_deadline(sandbox: SandboxHarness, quarters: int) -> None:
    """With a 2 s limit, the run shows 2,000 eqns (500 in `make test`), so the supervisor waits
    2 + 2,000 × 8 ms = 18 s (6 s) before it kills the run (which sleeps 60 s in its call)."""
    n = 250 * quarters
    eqns = 2 * n + 1  # + the debug_callback
    assert eqns > SCALE_FROM_EQNS
    events = sandbox.run(LARGE_THEN_SLOW.replace("range(N)", f"range({n})"), wall_s=2.0)
    staged = [e for e in events if isinstance(e, JaxprStaged)]
    assert staged and len(staged[0].jaxpr.eqns) == eqns
    scaled = [e for e in events if isinstance(e, BudgetScaled)]
    assert len(scaled) == 1
    # The supervisor's size: the jaxpr's eqns, or the events sent before it, whichever is more.
    size = max(eqns, scaled[0].seq)
    expected = scaled_limit(2.0, 1.0, size, sandbox.limits)
    assert expected > 2.0 + 3.0  # later than the unscaled deadline by seconds
    assert scaled[0].eqns == eqns and scaled[0].wall_s == pytest.approx(expected)
    assert events.index(scaled[0]) == events.index(staged[0]) + 1
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, RunFailed) and terminal.kind == "timeout", terminal
    assert f"{expected:.0f} s (scaled for a program of about {size:,} eqns)" in terminal.message
    assert terminal.stage == "call"
    assert "lax.fori_loop" in (terminal.explanation or "")


# 2N eqn_recorded events stream while f is traced, and the trace then sleeps: the jaxpr is
# never complete, so only the events sent tell the run's size.
STREAMS_THEN_STALLS = """\
import time
import jax.numpy as jnp

def f(x):
    for _ in range(N):
        x = jnp.sin(x) + x
    time.sleep(60)
    return x

args = (jnp.ones(3),)
"""


@pytest.mark.parametrize("quarters", SIZES)
def test_the_events_of_a_trace_grow_the_limit_before_its_jaxpr(
    sandbox: SandboxHarness, quarters: int
) -> None:
    n = 375 * quarters  # 1,500 at full size: 3,000 eqn_recorded events
    streamed = 2 * n
    events = sandbox.run(STREAMS_THEN_STALLS.replace("range(N)", f"range({n})"), wall_s=2.0)
    assert not [e for e in events if isinstance(e, JaxprStaged)]
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, RunFailed) and terminal.kind == "timeout", terminal
    assert terminal.stage == "trace"
    # The supervisor re-checks every 256 events: the last check before the stall saw at least
    # 2,816 of the 3,000 eqn_recorded events (512 of 750 in `make test`).
    recorded = len(events) - 4  # run_started, two stage_started, run_failed
    assert recorded >= streamed
    assert "scaled for a program of about" in terminal.message
    size = int(terminal.message.split("about ")[1].split(" eqns")[0].replace(",", ""))
    assert streamed // 256 * 256 - 16 <= size <= recorded + 3
    expected = scaled_limit(2.0, 1.0, size, sandbox.limits)
    assert f"limit of {expected:.0f} s" in terminal.message
