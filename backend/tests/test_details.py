"""Details on demand (design 0023): a page's run streams summaries, the whole events stay in the
session's worker, and a DetailRequest gets each back exactly as the eager stream carried it; a
detail asked for after the worker is gone gets a clear answer, never a hang."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest
from jaxscope.protocol import (
    DetailFailed,
    DetailRequest,
    EventModel,
    JaxprView,
    RunFailed,
    RunRequest,
)
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.worker import DETAILS_GONE
from jaxscope.settings import Limits

from tests.harness import REPO, SandboxHarness

# Values long enough that a step's previews are worth leaving out (sin_times_x's own are 3 floats).
SIN_TIMES_X = (
    REPO / "exhibits/transpose/examples/sin_times_x.py"
).read_text() + "\nargs = (jnp.linspace(0.0, 1.0, 64),)\n"
# A gradient of 64 x 128 = 8,192 values: its check streams a summary.
WIDE = """\
import jax.numpy as jnp
def f(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)
args = (jnp.linspace(-1.0, 1.0, 64 * 128).reshape(64, 128), jnp.linspace(0.0, 1.0, 64))
"""


def _run(
    sandbox: SandboxHarness,
    session: Session,
    code: str,
    exhibit: str,
    details: Literal["eager", "on_demand"],
    run_id: str,
) -> list[EventModel]:
    events: list[EventModel] = []

    async def go() -> None:
        async def emit(event: EventModel) -> None:
            events.append(event)

        request = RunRequest(run_id=run_id, exhibit=exhibit, code=code, details=details)
        await session.run(request, emit)

    sandbox.call(go())
    return events


def _detail(
    sandbox: SandboxHarness, session: Session, run_id: str, detail_id: str
) -> list[EventModel]:
    answers: list[EventModel] = []

    async def go() -> None:
        async def emit(event: EventModel) -> None:
            answers.append(event)

        await asyncio.wait_for(
            session.detail(DetailRequest(run_id=run_id, detail_id=detail_id), emit), 60
        )

    sandbox.call(go())
    return answers


def _wire(event: EventModel) -> dict[str, object]:
    return event.model_dump(mode="json", exclude={"run_id", "seq", "detail_id", "detail_of"})


@pytest.mark.parametrize(
    ("exhibit", "code"),
    [("transpose", SIN_TIMES_X), ("jvp", SIN_TIMES_X), ("transpose", WIDE)],
    ids=["transpose", "jvp", "transpose_wide_gradient"],
)
def test_each_detail_equals_the_eager_event(
    sandbox: SandboxHarness, exhibit: str, code: str
) -> None:
    eager_session, page_session = sandbox.session(), sandbox.session()
    try:
        eager = _run(sandbox, eager_session, code, exhibit, "eager", "eager-1")
        page = _run(sandbox, page_session, code, exhibit, "on_demand", "page-1")
        assert eager[-1].type == page[-1].type == "run_finished", page[-1]
        # An eager run (the CLI's) also sends a wide gradient's every value after the check
        # (gradient_values_sent, design 0060); the page's run does not: it asks for details.
        whole_values = [e for e in eager if e.type == "gradient_values_sent"]
        assert bool(whole_values) == (code == WIDE), [e.type for e in eager]
        assert [e.type for e in eager if e.type != "gradient_values_sent"] == [e.type for e in page]
        summaries = [e for e in page if e.detail_id is not None]
        assert summaries, "the run streamed no summary"
        assert all(e.detail_id is None for e in eager)
        # A summary leaves the previews out, keeping the rest; it is smaller than its event
        # unless its values were not computed yet (a step's, computed when the page opens it,
        # design 0068: its few values' summary may outweigh them).
        for summary in summaries:
            whole = eager[summary.seq]
            deferred = '"deferred":true' in summary.model_dump_json()
            assert deferred or len(summary.model_dump_json()) < len(whole.model_dump_json())
            assert '"preview":"' not in summary.model_dump_json() or summary.type == (
                "gradient_checked"
            )
        for summary in summaries:
            assert summary.detail_id is not None
            answers = _detail(sandbox, page_session, "page-1", summary.detail_id)
            assert len(answers) == 1, answers
            whole = answers[0]
            assert whole.detail_of == summary.detail_id
            assert whole.seq == summary.seq and whole.run_id == "page-1"
            assert _wire(whole) == _wire(eager[summary.seq]), summary.type
        # Events that are not summarised are streamed exactly as the eager stream has them.
        for event in page:
            if event.detail_id is None and event.type not in ("run_finished", "stage_timed"):
                assert _wire(event) == _wire(eager[event.seq]) or event.type == "run_started"
    finally:
        sandbox.call(eager_session.close())
        sandbox.call(page_session.close())


def test_details_are_gone_after_the_next_run_or_the_end(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    try:
        first = _run(sandbox, session, SIN_TIMES_X, "transpose", "on_demand", "r1")
        detail_id = next(e.detail_id for e in first if e.detail_id is not None)
        assert detail_id is not None
        assert session.details_worker is not None and session.details_worker.alive
        unknown = _detail(sandbox, session, "r1", "d999999")
        assert isinstance(unknown[0], DetailFailed) and not unknown[0].gone
        _run(sandbox, session, SIN_TIMES_X, "tracing", "on_demand", "r2")
        gone = _detail(sandbox, session, "r1", detail_id)
        assert len(gone) == 1 and isinstance(gone[0], DetailFailed) and gone[0].gone
        assert "run again" in gone[0].message
    finally:
        sandbox.call(session.close())
    after_close = _detail(sandbox, session, "r1", "d0")
    assert isinstance(after_close[0], DetailFailed) and after_close[0].gone


def test_a_cancelled_run_says_its_details_went_with_its_worker(sandbox: SandboxHarness) -> None:
    """A page that asks for a range of a run it cancelled (a new-user review: the 20,001-eqn
    loop cancelled once every eqn was in) is told the run was cancelled, not that "the session
    ran again"; a run before it still gets the generic answer."""
    session = sandbox.session()

    async def cancelled_run() -> None:
        async def emit(event: EventModel) -> None:
            pass

        request = RunRequest(run_id="c1", exhibit="tracing", code="while True:\n    pass\n")
        task = asyncio.ensure_future(session.run(request, emit))
        while session.worker is None:  # the run is on a worker
            await asyncio.sleep(0.05)
        assert session.cancel("c1")
        terminal = await task
        assert isinstance(terminal, RunFailed) and terminal.kind == "cancelled"

    try:
        _run(sandbox, session, SIN_TIMES_X, "transpose", "on_demand", "r1")
        sandbox.call(cancelled_run())
        (answer,) = _detail(sandbox, session, "c1", "r0")
        assert isinstance(answer, DetailFailed) and answer.gone
        assert answer.message == (
            "this run was cancelled: its worker was stopped, and its details with it: "
            "run again to see them"
        )
        (older,) = _detail(sandbox, session, "r1", "d0")
        assert isinstance(older, DetailFailed) and older.gone
        assert older.message == DETAILS_GONE
    finally:
        sandbox.call(session.close())


def test_an_eager_run_keeps_no_worker(sandbox: SandboxHarness) -> None:
    session = sandbox.session()
    try:
        _run(sandbox, session, SIN_TIMES_X, "transpose", "eager", "e1")
        assert session.details_worker is None
    finally:
        sandbox.call(session.close())


def test_a_run_waiting_for_a_slot_reclaims_kept_details() -> None:
    """A pool of one worker: the first session's kept worker is released for the second
    session's run, whose page is then told the first run's details are gone."""
    harness = SandboxHarness(Limits(wall_s=10.0, cpu_s=10.0), size=0)
    harness.pool.max_workers = 1
    first, second = harness.session(), harness.session()
    try:
        events = _run(harness, first, SIN_TIMES_X, "transpose", "on_demand", "a1")
        detail_id = next(e.detail_id for e in events if e.detail_id is not None)
        assert detail_id is not None and first.details_worker is not None
        other = _run(harness, second, SIN_TIMES_X, "tracing", "eager", "b1")
        assert other[-1].type == "run_finished", other[-1]
        gone = _detail(harness, first, "a1", detail_id)
        assert isinstance(gone[0], DetailFailed) and gone[0].gone
    finally:
        harness.call(first.close())
        harness.call(second.close())
        harness.close()


def test_a_worker_that_retires_sends_the_whole_events_before_its_terminal(
    sandbox: SandboxHarness,
) -> None:
    """A snippet that leaves a thread running retires its worker after the run: the worker does
    not stay to answer, so each summary's whole event arrives before run_finished (same seq,
    ``detail_of``) and equals the eager stream's."""
    code = (
        "import threading, time\n"
        "threading.Thread(target=lambda: time.sleep(30), daemon=True).start()\n" + SIN_TIMES_X
    )
    eager_session, page_session = sandbox.session(), sandbox.session()
    try:
        eager = _run(sandbox, eager_session, code, "transpose", "eager", "t-eager")
        page = _run(sandbox, page_session, code, "transpose", "on_demand", "t-page")
        assert page[-1].type == "run_finished", page[-1]
        summaries = {e.detail_id: e for e in page if e.detail_id is not None}
        wholes = [e for e in page if e.detail_of is not None]
        assert summaries and {e.detail_of for e in wholes} == set(summaries)
        for whole in wholes:
            assert whole.detail_of is not None
            assert whole.seq == summaries[whole.detail_of].seq
            assert _wire(whole) == _wire(eager[whole.seq])
        assert page_session.details_worker is None
    finally:
        sandbox.call(eager_session.close())
        sandbox.call(page_session.close())


def test_a_retiring_worker_sends_a_bounded_part_of_a_large_capture(
    sandbox: SandboxHarness,
) -> None:
    """A 10,001-eqn loop's JVP in a page's run holds about 20 MB of eqn ranges no one asked for.
    A retiring worker sends its summaries' whole events and then ranges only up to
    ``RETIRED_DETAIL_BYTES``: the run finishes (before, a 32,001-eqn loop passed the run's
    64 MiB limit this way and ended ``invalid_event``), and a range not sent answers gone."""
    from jaxscope.sandbox.runner import RETIRED_DETAIL_BYTES
    from jaxscope.summaries import MAX_STREAMED_LINE_BYTES

    loop = (REPO / "examples" / "real" / "loop_20k.py").read_text()
    assert "ITERATIONS = 5_000" in loop
    code = (
        "import threading, time\n"
        "threading.Thread(target=lambda: time.sleep(60), daemon=True).start()\n"
        + loop.replace("ITERATIONS = 5_000", "ITERATIONS = 2_500")
    )
    session = sandbox.session()
    try:
        page = _run(sandbox, session, code, "jvp", "on_demand", "big-page")
        assert page[-1].type == "run_finished", page[-1]
        before = [e for e in page if e.detail_of is not None]
        sent = sum(len(e.model_dump_json()) for e in before)
        assert sent <= RETIRED_DETAIL_BYTES + MAX_STREAMED_LINE_BYTES
        # every summary's whole event went first; the ranges are more than were sent
        summaries = {e.detail_id for e in page if e.detail_id is not None}
        assert summaries <= {e.detail_of for e in before}
        ranges = [
            r.detail_id
            for e in page
            for v in vars(e).values()
            if isinstance(v, JaxprView)
            for r in v.eqn_ranges
        ]
        unsent = [r for r in ranges if r not in {e.detail_of for e in before}]
        assert unsent, (len(ranges), sent)
        answer = _detail(sandbox, session, "big-page", unsent[-1])
        assert [a.type for a in answer] == ["detail_failed"] and getattr(answer[0], "gone", None)
    finally:
        sandbox.call(session.close())


FORGES_RANGE_IDS = r"""
import sys, json
m = sys.modules["__main__"]
_write = m._write_event_line
_forged = [0]
def _forge(line):
    d = json.loads(line)
    if d.get("type") == "eqn_recorded" and _forged[0] < 60_000:
        d["list_ranges"] = [
            {"field": "f", "start": 0, "stop": 1, "detail_id": f"z{_forged[0] + i}"}
            for i in range(15_000)
        ]
        _forged[0] += 15_000
        line = json.dumps(d, separators=(",", ":")).encode() + b"\n"
    _write(line)
m._write_event_line = _forge

import jax.numpy as jnp
def f(x):
    for _ in range(8):
        x = jnp.sin(x) + x
    return x
args = (1.0,)
"""


def test_a_run_that_forges_more_detail_ids_than_the_bound_is_ended(
    sandbox: SandboxHarness,
) -> None:
    """A snippet can replace the runner's event writer (design 0023) and add range ids to its
    events; the supervisor keeps each while the worker is kept for details. Past
    ``MAX_RUN_DETAIL_IDS`` in one run the run ends ``invalid_event`` instead of being held."""
    from jaxscope.sandbox.worker import MAX_RUN_DETAIL_IDS

    assert 45_000 < MAX_RUN_DETAIL_IDS < 60_000
    session = sandbox.session()
    try:
        events = _run(sandbox, session, FORGES_RANGE_IDS, "tracing", "on_demand", "forged")
        terminal = events[-1]
        assert terminal.type == "run_failed", terminal
        assert getattr(terminal, "kind", None) == "invalid_event"
        assert f"{MAX_RUN_DETAIL_IDS:,} detail ids" in getattr(terminal, "message", "")
        # what was registered before the bound is not kept for a worker that was killed
        assert session.details_worker is None
    finally:
        sandbox.call(session.close())


def test_a_failed_runs_capture_is_sent_for_a_bounded_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """``runner._send_capture``: a failed run's held whole events go before ``run_failed``, for at
    most ``seconds`` (its time counts against the run's limits, and a run that failed near its
    wall-clock limit must end with its own error); without ``seconds`` all of them go (up to the
    byte cap); an error while sending never stops the terminal event."""
    import time

    from jaxscope.protocol import RunRequest
    from jaxscope.sandbox import runner

    sent: list[str] = []

    def slow_send(event: object, detail_id: str, run_id: str) -> int:
        time.sleep(0.02)
        sent.append(detail_id)
        return 10

    monkeypatch.setattr(runner, "_send_whole", slow_send)
    ctx = runner.RunContext(
        RunRequest(run_id="r", exhibit="transpose", code="", details="on_demand")
    )
    ctx.capture = {f"d{i}": object() for i in range(100)}  # type: ignore[misc]
    runner._send_capture(ctx)
    assert len(sent) == 100
    sent.clear()
    runner._send_capture(ctx, 0.1)
    assert 1 <= len(sent) < 100  # stopped by the time, not the bytes (100 x 10 B)

    def failing_send(event: object, detail_id: str, run_id: str) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "_send_whole", failing_send)
    runner._send_capture(ctx)  # does not raise
