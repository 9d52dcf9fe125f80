"""A fair share of workers per client (sandbox/tenancy.py), and the pool's first-come queue.

A break-it review opened 8 websockets from one client, each running ``time.sleep(25)``: every
other user's run then failed "all 8 sandbox workers are busy". Since issue 12 a worker serves one
run (sessions hold no worker between runs) and a run is never refused for capacity: it waits in
the pool's first-come queue. A client holds at most ``per_owner`` workers at once; a run of a
client at its share keeps its place in the queue (``run_queued`` with reason ``client_share``)
while other clients' runs go by, and gets the next worker once it is within its share again.
These tests hold those rules on a real pool and real workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from dataclasses import dataclass

import pytest
from jaxscope.protocol import (
    EventModel,
    RunFailed,
    RunFinished,
    RunQueued,
    RunRequest,
    WorkerKind,
)
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.tenancy import Tenancy
from jaxscope.settings import Settings, settings_from_env

from exhibits.registry import EXHIBITS
from tests.harness import SandboxHarness, assert_one_terminal

OK = "def f(x):\n    return x * 100.0\nargs = (1.0,)\n"


# Holds its worker until the test cancels it (so that no step depends on how long a worker
# takes to start on a loaded machine).
HOLD = "import time\ntime.sleep(120)\n" + OK


def sleeping(seconds: float) -> str:
    return f"import time\ntime.sleep({seconds})\n" + OK


def cancelled(run: Run) -> bool:
    end = run.terminal
    return isinstance(end, RunFailed) and end.kind == "cancelled"


@dataclass
class Run:
    """One run's events with the loop time each arrived."""

    events: list[EventModel]
    stamps: list[float]

    @property
    def queued(self) -> list[RunQueued]:
        return [e for e in self.events if isinstance(e, RunQueued)]

    @property
    def terminal(self) -> EventModel:
        """The run's one terminal event (``run_queued`` is not a step of the run: seq 0)."""
        return assert_one_terminal([e for e in self.events if not isinstance(e, RunQueued)])

    @property
    def started_at(self) -> float:
        """When the run's first own event (not ``run_queued``) arrived: it had a worker."""
        pairs = zip(self.stamps, self.events, strict=True)
        return next(t for t, e in pairs if not isinstance(e, RunQueued))

    @property
    def ended_at(self) -> float:
        return self.stamps[-1]


async def arun(session: Session, code: str, run_id: str, wall_s: float = 30) -> Run:
    run = Run([], [])
    loop = asyncio.get_running_loop()

    async def emit(event: EventModel) -> None:
        run.events.append(event)
        run.stamps.append(loop.time())

    request = RunRequest(run_id=run_id, exhibit="tracing", code=code)
    await session.run(request, emit, wall_s=wall_s)
    return run


async def holding(session: Session) -> None:
    """Until ``session``'s run holds its worker."""
    while not session.holds_worker():
        await asyncio.sleep(0.05)


async def queued(pool: WorkerPool, count: int) -> None:
    """Until ``count`` runs wait in ``pool``'s queue."""
    while pool.state()["waiting"] < count:
        await asyncio.sleep(0.05)


@dataclass(eq=False)
class FakeTenant:
    owner: str | None
    has_worker: bool = True
    kind: WorkerKind = "jax"

    def holds_worker(self) -> bool:
        return self.has_worker

    def held_kind(self) -> WorkerKind | None:
        return self.kind if self.has_worker else None


def test_tenancy_rules_on_fake_sessions() -> None:
    t = Tenancy(per_owner=2)
    a1, a2, b1 = FakeTenant("a"), FakeTenant("a"), FakeTenant("b")
    new = FakeTenant("a", has_worker=False)
    for x in (a1, a2, b1, new):
        t.join(x)
    assert t.over_cap(new)  # a1 and a2 hold workers: a's share of 2
    assert not t.over_cap(FakeTenant("b", has_worker=False))
    assert set(t.holding("a")) == {a1, a2} and t.holding("b") == [b1]
    a1.has_worker = False  # its run ended (its worker was killed)
    assert not t.over_cap(new) and t.holding("a") == [a2]
    t.leave(a2)
    assert t.holding("a") == []
    assert not Tenancy(None).over_cap(new)  # no cap
    assert not t.over_cap(FakeTenant(None, has_worker=False))  # no owner: no share to keep
    with pytest.raises(ValueError):
        Tenancy(per_owner=0)


def test_per_client_share_setting() -> None:
    assert Settings(max_workers=8).per_client == 4  # half the pool, rounded up
    assert Settings(max_workers=3).per_client == 2
    assert Settings(max_workers=1).per_client == 1
    assert Settings(max_workers=8, max_workers_per_client=9).per_client == 8
    env = settings_from_env({"JAXSCOPE_MAX_WORKERS_PER_CLIENT": "2"})
    assert env.max_workers_per_client == 2 and env.per_client == 2


def test_idle_sessions_hold_no_workers(sandbox: SandboxHarness) -> None:
    """A session holds a worker only while it runs: after runs of two sessions, a full pool
    of two has room at once for a third session, and a client at a share of one runs from its
    other session without waiting (before issue 12, idle sessions kept their workers and had to
    be evicted)."""
    pool = WorkerPool(sandbox.limits, size=0, max_workers=2)
    tenancy = Tenancy(per_owner=1)
    a1, a2, b1 = (Session(pool, EXHIBITS, tenancy=tenancy, owner=o) for o in ("a", "a", "b"))

    async def scenario() -> list[Run]:
        runs = [await arun(a1, OK, "a1"), await arun(b1, OK, "b1")]
        assert not pool.full() and pool.state()["leased"] == 0
        runs.append(await arun(a2, OK, "a2"))
        return runs

    try:
        runs = sandbox.call(scenario())
        for run in runs:
            assert isinstance(run.terminal, RunFinished)
            assert not run.queued
        assert not any(s.holds_worker() for s in (a1, a2, b1))
        assert tenancy.holding("a") == [] and pool.state()["leased"] == 0
    finally:
        for s in (a1, a2, b1):
            sandbox.call(s.close())
        sandbox.call(pool.close())


def test_a_client_at_its_share_waits_and_others_still_run(sandbox: SandboxHarness) -> None:
    pool = WorkerPool(sandbox.limits, size=0, max_workers=3)
    tenancy = Tenancy(per_owner=1)
    a1, a2, b1 = (Session(pool, EXHIBITS, tenancy=tenancy, owner=o) for o in ("a", "a", "b"))

    async def scenario() -> tuple[Run, Run, Run]:
        first = asyncio.ensure_future(arun(a1, HOLD, "a1", wall_s=200))
        await holding(a1)
        # a is at its share while a1 runs: a2 waits (its wall clock, 1.5 s, does not run out
        # while it waits: it counts from the worker taking the job) ...
        waiting = asyncio.ensure_future(arun(a2, OK, "a2", wall_s=1.5))
        await queued(pool, 1)
        # ... while another client's run, arriving later, goes by.
        other = await arun(b1, OK, "b1")
        await asyncio.sleep(1.0)
        assert not waiting.done()
        assert a1.cancel()  # a1's worker is freed: a2 gets the next one
        return await first, await waiting, other

    try:
        slept, waited, other = sandbox.call(scenario())
        assert cancelled(slept) and isinstance(other.terminal, RunFinished)
        assert isinstance(waited.terminal, RunFinished)
        assert waited.queued and waited.queued[0].reason == "client_share"
        assert waited.queued[0].position == 1
        # b never waited for a's share (at most for a worker to start in a full pool).
        assert all(e.reason == "pool_full" for e in other.queued)
        assert other.ended_at < slept.ended_at < waited.started_at
    finally:
        for s in (a1, a2, b1):
            sandbox.call(s.close())
        sandbox.call(pool.close())


def test_one_clients_waiting_runs_go_first_come_first_served(sandbox: SandboxHarness) -> None:
    """Runs of one client at its share get workers in the order they began to wait."""
    pool = WorkerPool(sandbox.limits, size=0, max_workers=3)
    tenancy = Tenancy(per_owner=1)
    a1, a2, a3, a4 = (Session(pool, EXHIBITS, tenancy=tenancy, owner="a") for _ in range(4))

    async def scenario() -> list[Run]:
        tasks = [asyncio.ensure_future(arun(a1, HOLD, "a1", wall_s=200))]
        await holding(a1)
        for n, session in enumerate((a2, a3, a4), start=2):
            tasks.append(asyncio.ensure_future(arun(session, sleeping(0.5), f"a{n}")))
            await queued(pool, n - 1)
        await asyncio.sleep(1.0)  # every waiting run has been told its place
        assert a1.cancel()
        return list(await asyncio.gather(*tasks))

    try:
        runs = sandbox.call(scenario())
        assert cancelled(runs[0])
        assert all(isinstance(r.terminal, RunFinished) for r in runs[1:])
        assert [r.queued[0].position for r in runs[1:]] == [1, 2, 3]
        assert all(r.queued[0].reason == "client_share" for r in runs[1:])
        # One at a time (share 1), in arrival order.
        for before, after in itertools.pairwise(runs):
            assert before.ended_at < after.started_at
    finally:
        for s in (a1, a2, a3, a4):
            sandbox.call(s.close())
        sandbox.call(pool.close())


def test_a_client_at_its_share_keeps_its_place_so_none_is_starved(
    sandbox: SandboxHarness,
) -> None:
    """a3 (client a at its share of two) waits first, then b2 (within b's share, for a full
    pool): when a1's worker is freed, a3, earlier in the queue and within its share again, gets
    the next worker, not b2, which arrived later. A run passed over for its client's share keeps
    its place, so later arrivals never overtake it for good."""
    pool = WorkerPool(sandbox.limits, size=0, max_workers=3)
    tenancy = Tenancy(per_owner=2)
    a1, a2, a3, b1, b2 = (
        Session(pool, EXHIBITS, tenancy=tenancy, owner=o) for o in ("a", "a", "a", "b", "b")
    )

    async def scenario() -> list[Run]:
        tasks = [asyncio.ensure_future(arun(a1, HOLD, "a1", wall_s=200))]
        await holding(a1)
        tasks.append(asyncio.ensure_future(arun(a2, HOLD, "a2", wall_s=200)))
        await holding(a2)
        tasks.append(asyncio.ensure_future(arun(a3, OK, "a3")))
        await queued(pool, 1)
        tasks.append(asyncio.ensure_future(arun(b1, HOLD, "b1", wall_s=200)))
        await holding(b1)
        tasks.append(asyncio.ensure_future(arun(b2, OK, "b2")))
        await queued(pool, 2)
        await asyncio.sleep(1.0)  # both waiting runs have been told their place
        assert a1.cancel()  # one worker is freed: a3's, by its place
        await tasks[2]
        await tasks[4]  # then b2 gets the worker a3's run freed
        assert a2.cancel() and b1.cancel()
        return list(await asyncio.gather(*tasks))

    try:
        runs = sandbox.call(scenario())
        first, _, waited, long, later = runs
        assert all(cancelled(r) for r in (first, runs[1], long))
        assert isinstance(waited.terminal, RunFinished) and isinstance(later.terminal, RunFinished)
        assert (waited.queued[0].position, waited.queued[0].reason) == (1, "client_share")
        assert (later.queued[0].position, later.queued[0].reason) == (2, "pool_full")
        assert first.ended_at < waited.started_at < later.started_at
        assert waited.ended_at < later.started_at
    finally:
        for s in (a1, a2, a3, b1, b2):
            sandbox.call(s.close())
        sandbox.call(pool.close())


def test_the_server_shares_its_pool_per_client_address() -> None:
    from fastapi.testclient import TestClient
    from jaxscope.server.app import create_app

    settings = Settings(workers=0, max_workers=6, check_exhibits=False)
    app = create_app(settings)
    with TestClient(app, base_url="http://localhost:8000") as client:
        assert client.get("/api/health").json()["pool"]["max"] == 6
    assert app.state.tenancy.per_owner == settings.per_client == 3


def test_a_run_cancelled_while_waiting_for_a_worker_leaves_none_leased(
    sandbox: SandboxHarness,
) -> None:
    # A review closed a tab while its run waited in a full pool: the pool's acquire went on
    # and later leased a worker to nobody, for good (4 such closes locked the server).
    pool = WorkerPool(sandbox.limits, size=0, max_workers=1)
    busy = Session(pool, EXHIBITS)
    waiter = Session(pool, EXHIBITS)

    async def scenario() -> None:
        running = asyncio.ensure_future(arun(busy, sleeping(4), "busy"))
        await holding(busy)
        waiting = asyncio.ensure_future(arun(waiter, OK, "waiter"))
        await asyncio.sleep(0.5)
        assert pool.state()["waiting"] == 1
        waiting.cancel()  # what the websocket closing does to its run task
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await running
        await busy.close()
        for _ in range(40):  # the pool may start a spare in the freed slot: never lease it
            if pool.state()["leased"] == 0 and pool.state()["waiting"] == 0:
                break
            await asyncio.sleep(0.1)

    try:
        sandbox.call(scenario())
        state = pool.state()
        assert (state["leased"], state["waiting"]) == (0, 0), state
        assert waiter.worker is None
    finally:
        for s in (busy, waiter):
            sandbox.call(s.close())
        sandbox.call(pool.close())


def test_a_cancelled_waiting_run_ends_cancelled_and_leaves_the_queue(
    sandbox: SandboxHarness,
) -> None:
    """Cancel (the page's button) of a run that waits in the queue ends it ``cancelled``, its
    one terminal event, and it no longer waits."""
    pool = WorkerPool(sandbox.limits, size=0, max_workers=1)
    busy, waiter = Session(pool, EXHIBITS), Session(pool, EXHIBITS)

    async def scenario() -> Run:
        running = asyncio.ensure_future(arun(busy, sleeping(4), "busy"))
        await holding(busy)
        waiting = asyncio.ensure_future(arun(waiter, OK, "waiter"))
        await queued(pool, 1)
        await asyncio.sleep(0.5)  # it has been told its place
        assert waiter.cancel("waiter")
        run = await waiting
        assert pool.state()["waiting"] == 0
        await running
        return run

    try:
        run = sandbox.call(scenario())
        assert run.queued and run.queued[0].position == 1
        end = run.terminal
        assert isinstance(end, RunFailed) and end.kind == "cancelled"
    finally:
        for s in (busy, waiter):
            sandbox.call(s.close())
        sandbox.call(pool.close())


def test_a_waiting_run_takes_the_worker_freed_by_the_first_run_to_end(
    sandbox: SandboxHarness,
) -> None:
    # Both workers busy when s3 starts waiting; s2's run ends first: s3 gets the worker freed
    # by it (killed after its run), without waiting for s1's long run.
    pool = WorkerPool(sandbox.limits, size=0, max_workers=2)
    tenancy = Tenancy(per_owner=None)
    s1, s2, s3 = (Session(pool, EXHIBITS, tenancy=tenancy, owner=o) for o in "xyz")

    async def scenario() -> tuple[Run, Run, Run]:
        slow = asyncio.ensure_future(arun(s1, sleeping(12), "s1"))
        quick = asyncio.ensure_future(arun(s2, sleeping(1.0), "s2"))
        await holding(s1)
        await holding(s2)
        third = await arun(s3, OK, "s3", wall_s=25)
        return await slow, await quick, third

    try:
        slow, quick, third = sandbox.call(scenario())
        assert isinstance(third.terminal, RunFinished), third.terminal
        assert isinstance(slow.terminal, RunFinished) and isinstance(quick.terminal, RunFinished)
        assert third.queued and third.queued[0].reason == "pool_full"
        assert quick.ended_at < third.started_at and third.ended_at < slow.ended_at
        assert not any(s.holds_worker() for s in (s1, s2, s3))
    finally:
        for s in (s1, s2, s3):
            sandbox.call(s.close())
        sandbox.call(pool.close())
