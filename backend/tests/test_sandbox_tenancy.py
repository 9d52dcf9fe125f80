"""A fair share of workers per client, and idle sessions giving theirs up (sandbox/tenancy.py).

A break-it review opened 8 websockets from one client, each running ``time.sleep(25)``: every
other user's run then failed "all 8 sandbox workers are busy". These tests hold the two rules
(per-client cap, idle eviction when the pool is full) on a real pool and real workers.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from jaxscope.protocol import EventModel, RunFailed, RunFinished
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.tenancy import Tenancy
from jaxscope.settings import Settings, settings_from_env

from exhibits.registry import EXHIBITS
from tests.harness import SandboxHarness

OK = "def f(x):\n    return x * 100.0\nargs = (1.0,)\n"
SLEEP = "import time\ntime.sleep(4)\n" + OK


def terminal(events: list[EventModel]) -> EventModel:
    return events[-1]


@dataclass(eq=False)
class FakeTenant:
    owner: str | None
    last_used: float
    busy: bool = False
    has_worker: bool = True
    acquiring: bool = False
    gave_up: list[bool] = field(default_factory=list)

    def holds_worker(self) -> bool:
        return self.has_worker

    def claims_worker(self) -> bool:
        return self.has_worker or self.acquiring

    def running(self) -> bool:
        return self.busy

    def give_up_worker(self) -> None:
        self.has_worker = False
        self.gave_up.append(True)


def test_tenancy_rules_on_fake_sessions() -> None:
    t = Tenancy(per_owner=2)
    a1, a2 = FakeTenant("a", 1.0), FakeTenant("a", 2.0, busy=True)
    b1 = FakeTenant("b", 0.5)
    new = FakeTenant("a", 3.0, has_worker=False)
    for x in (a1, a2, b1, new):
        t.join(x)
    assert t.over_cap(new)  # a1 and a2 hold workers: a's share of 2
    assert not t.over_cap(FakeTenant("b", 0.0, has_worker=False))
    # The owner's idle session gives up (a2 is running: never it), not b's older one.
    assert t.evict_idle("a") and a1.gave_up == [True] and not a2.gave_up and not b1.gave_up
    assert not t.over_cap(new)
    assert not t.evict_idle("a")  # only the running one is left
    # Pool full: the idle session used least recently, whoever's.
    assert t.evict_idle(any_owner=True) and b1.gave_up == [True]
    assert t.evicted == 2
    t.leave(a2)
    assert t.holding("a") == []
    assert not Tenancy(None).over_cap(new)
    # A session still waiting in the pool counts toward its client's share (a review got a
    # client 3 workers under a cap of 2 while one of its runs waited for a worker to start).
    waiting = FakeTenant("a", 4.0, busy=True, has_worker=False, acquiring=True)
    t.join(waiting)
    t.per_owner = 1
    assert t.over_cap(new) and t.holding("a") == [waiting]
    assert not t.evict_idle("a")  # it holds nothing to give up


def test_per_client_share_setting() -> None:
    assert Settings().per_client == 4  # half of the default 8 workers
    assert Settings(max_workers=3).per_client == 2
    assert Settings(max_workers=1).per_client == 1
    assert Settings(max_workers=8, max_workers_per_client=9).per_client == 8
    env = settings_from_env({"JAXSCOPE_MAX_WORKERS_PER_CLIENT": "2"})
    assert env.max_workers_per_client == 2 and env.per_client == 2


def test_a_clients_idle_session_gives_its_worker_to_its_new_one(sandbox: SandboxHarness) -> None:
    pool = WorkerPool(sandbox.limits, size=0, max_workers=3)
    tenancy = Tenancy(per_owner=1)
    a1 = Session(pool, EXHIBITS, tenancy=tenancy, owner="a")
    a2 = Session(pool, EXHIBITS, tenancy=tenancy, owner="a")
    try:
        assert isinstance(terminal(sandbox.run(OK, session=a1)), RunFinished)
        first = a1.worker
        assert first is not None and a1.holds_worker()
        assert isinstance(terminal(sandbox.run(OK, session=a2)), RunFinished)
        assert not a1.holds_worker() and not first.alive and a2.holds_worker()
        assert tenancy.evicted == 1
        # a1 runs again on a fresh worker (a2 is idle now and gives up its own).
        assert isinstance(terminal(sandbox.run(OK, session=a1)), RunFinished)
        assert a1.worker is not None and a1.worker is not first and not a2.holds_worker()
    finally:
        for s in (a1, a2):
            sandbox.call(s.close())
        sandbox.call(pool.close())


def test_a_client_at_its_share_waits_and_others_still_run(sandbox: SandboxHarness) -> None:
    pool = WorkerPool(sandbox.limits, size=0, max_workers=3)
    tenancy = Tenancy(per_owner=1)
    a1 = Session(pool, EXHIBITS, tenancy=tenancy, owner="a")
    a2 = Session(pool, EXHIBITS, tenancy=tenancy, owner="a")
    b1 = Session(pool, EXHIBITS, tenancy=tenancy, owner="b")

    async def scenario() -> tuple[EventModel, EventModel, EventModel]:
        sleeping = asyncio.ensure_future(sandbox.arun(a1, SLEEP, wall_s=30))
        while not a1.holds_worker():  # a1's run has its worker
            await asyncio.sleep(0.05)
        # a is at its share and a1 is running: a2 waits, then fails saying why.
        refused = await sandbox.arun(a2, OK, wall_s=1.0)
        # Another client still gets a worker meanwhile.
        other = await sandbox.arun(b1, OK, wall_s=30)
        return (await sleeping)[-1], refused[-1], other[-1]

    try:
        slept, refused, other = sandbox.call(scenario())
        assert isinstance(slept, RunFinished) and isinstance(other, RunFinished)
        assert isinstance(refused, RunFailed) and refused.kind == "timeout"
        assert "already has 1 runs in progress" in refused.message
        # Once a1's run has ended, a2 gets a worker (a1's idle one is given up).
        assert isinstance(terminal(sandbox.run(OK, session=a2)), RunFinished)
        assert not a1.holds_worker()
    finally:
        for s in (a1, a2, b1):
            sandbox.call(s.close())
        sandbox.call(pool.close())


def test_a_full_pool_takes_the_worker_of_the_session_idle_longest(
    sandbox: SandboxHarness,
) -> None:
    pool = WorkerPool(sandbox.limits, size=0, max_workers=2)
    tenancy = Tenancy(per_owner=None)
    s1, s2, s3 = (Session(pool, EXHIBITS, tenancy=tenancy, owner=o) for o in "xyz")
    try:
        for s in (s1, s2):
            assert isinstance(terminal(sandbox.run(OK, session=s)), RunFinished)
        assert pool.full()
        # Before tenancy, s3 waited for its wall clock and failed "all 2 ... busy".
        assert isinstance(terminal(sandbox.run(OK, session=s3, wall_s=20)), RunFinished)
        assert not s1.holds_worker() and s2.holds_worker() and s3.holds_worker()
    finally:
        for s in (s1, s2, s3):
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
        sleeping = asyncio.ensure_future(sandbox.arun(busy, SLEEP, wall_s=30))
        while not busy.holds_worker():
            await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(sandbox.arun(waiter, OK, wall_s=30))
        await asyncio.sleep(0.5)
        assert pool.state()["waiting"] == 1
        waiting.cancel()  # what the websocket closing does to its run task
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await sleeping
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


def test_a_waiting_run_takes_the_worker_of_a_session_that_went_idle(
    sandbox: SandboxHarness,
) -> None:
    # Both workers busy when s3 starts waiting; s2's run ends first: s3 must not wait for its
    # wall clock while s2 sits idle on a worker.
    pool = WorkerPool(sandbox.limits, size=0, max_workers=2)
    tenancy = Tenancy(per_owner=None)
    s1, s2, s3 = (Session(pool, EXHIBITS, tenancy=tenancy, owner=o) for o in "xyz")
    short = "import time\ntime.sleep(1.0)\n" + OK
    long = "import time\ntime.sleep(12)\n" + OK

    async def scenario() -> tuple[EventModel, EventModel, float]:
        slow = asyncio.ensure_future(sandbox.arun(s1, long, wall_s=30))
        quick = asyncio.ensure_future(sandbox.arun(s2, short, wall_s=30))
        while not (s1.holds_worker() and s2.holds_worker()):
            await asyncio.sleep(0.05)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        third = await sandbox.arun(s3, OK, wall_s=25)
        took = loop.time() - t0
        await quick
        return third[-1], (await slow)[-1], took

    try:
        third, slow, took = sandbox.call(scenario())
        assert isinstance(third, RunFinished), third
        assert isinstance(slow, RunFinished)
        assert took < 10  # s1's 12 s sleep was not waited for
        assert not s2.holds_worker() and tenancy.evicted == 1
    finally:
        for s in (s1, s2, s3):
            sandbox.call(s.close())
        sandbox.call(pool.close())
