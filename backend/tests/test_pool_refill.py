"""The pool's delayed refill and its lease without futures (design 0080), on fake workers: no
process starts, so the races (a lease, a cancelled wait, a worker dying, a kept worker, the pool
closed while a replacement's start is still pending on the loop's timer) can be tried many
times in a second.

``WorkerPool.lease_now`` hands an idle spare out at once when nobody waits; the spare's
replacement starts :data:`~jaxscope.sandbox.pool.REFILL_DELAY_S` later (``loop.call_later``).
What must hold: the replacement does start, the timer firing after ``close()`` starts nothing,
no worker outlives the test, ``max_workers`` is never passed and ``state()`` ends at zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterator

import pytest
from jaxscope.protocol import WorkerKind
from jaxscope.sandbox.pool import REFILL_DELAY_S, WorkerPool
from jaxscope.sandbox.worker import WorkerProcess, WorkerStartError
from jaxscope.settings import Limits

from testkit import run_async


class _Proc:
    def __init__(self) -> None:
        self.returncode: int | None = None

    async def wait(self) -> int:
        while self.returncode is None:
            await asyncio.sleep(0.001)
        return self.returncode


class FakeWorker(WorkerProcess):
    """What the pool reads of a worker (alive, kill, close, the gone callbacks), no process."""

    def __init__(self, kind: WorkerKind) -> None:  # no super(): nothing is started
        self.fake = _Proc()
        self.proc = self.fake  # type: ignore[assignment]
        self._killed = False
        self._on_gone = []
        self.kind = kind
        _MADE.append(self)

    def kill(self) -> None:
        self._killed = True
        if self.fake.returncode is None:
            self.fake.returncode = -9
        self._gone()

    async def wait_closed(self, timeout: float = 5.0) -> int | None:
        self._gone()
        return self.proc.returncode

    def die(self) -> None:
        self.fake.returncode = 1


_MADE: list[FakeWorker] = []


@pytest.fixture
def fake_spawn(monkeypatch: pytest.MonkeyPatch) -> Iterator[random.Random]:
    """Workers are FakeWorkers that take 0-10 ms to start (``rng``: the test's draws)."""
    rng = random.Random(0)
    _MADE.clear()

    async def spawn(limits: Limits, kind: WorkerKind = "jax") -> WorkerProcess:
        await asyncio.sleep(rng.uniform(0.0, 0.01))
        return FakeWorker(kind)

    monkeypatch.setattr(WorkerProcess, "spawn", spawn)
    yield rng
    _MADE.clear()


def _alive() -> list[FakeWorker]:
    return [w for w in _MADE if w.alive]


async def _until(check: object, seconds: float = 2.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not check() and loop.time() < end:  # type: ignore[operator]
        await asyncio.sleep(0.005)


def test_lease_now_hands_the_spare_out_and_the_replacement_comes_later(
    fake_spawn: random.Random,
) -> None:
    async def main() -> None:
        pool = WorkerPool(Limits(), size=1, max_workers=3)
        pool.start(accelerator_spare=False)
        await _until(lambda: pool.state()["idle"] == 1)
        worker = pool.lease_now()
        assert worker is not None and worker.alive
        state = pool.state()
        assert (state["leased"], state["idle"], state["starting"]) == (1, 0, 0)
        assert (state["spawned"], state["handed_out"]) == (1, 1)
        await asyncio.sleep(REFILL_DELAY_S + 0.05)
        await _until(lambda: pool.state()["idle"] == 1)
        assert pool.state()["spawned"] == 2 and len(_alive()) == 2
        # Not while someone waits (here a caller whose client is at its share, passed over by
        # acquire's queue; a new caller goes through acquire), nor when the caller's client is
        # at its share, nor once the pool is closed.
        waiting = asyncio.ensure_future(pool.acquire(eligible=lambda: False))
        await asyncio.sleep(0.01)
        assert pool.waiting() == 1 and pool.state()["idle"] >= 1
        assert pool.lease_now() is None
        second = await pool.acquire()
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await _until(lambda: pool.state()["idle"] == 1)
        assert pool.lease_now(eligible=lambda: False) is None
        await pool.close()
        assert pool.lease_now() is None
        for leased in (worker, second):
            await leased.close()
        assert _alive() == []

    run_async(main())


def test_a_pool_closed_while_the_refill_waits_starts_nothing(fake_spawn: random.Random) -> None:
    async def main() -> None:
        pool = WorkerPool(Limits(), size=2, max_workers=4)
        pool.start(accelerator_spare=False)
        await _until(lambda: pool.state()["idle"] == 2)
        leased = [pool.lease_now(), await pool.acquire()]  # both refills on the timer
        await pool.close()
        await asyncio.sleep(REFILL_DELAY_S + 0.05)  # the timers fire on a closed pool
        assert pool.state()["spawned"] == 2
        assert {id(w) for w in _alive()} == {id(w) for w in leased}
        for worker in leased:
            assert worker is not None
            await worker.close()
        state = pool.state()
        assert (state["leased"], state["idle"], state["starting"], state["waiting"]) == (0,) * 4

    run_async(main())


@pytest.mark.parametrize("seed", range(6))
def test_leases_waits_cancels_deaths_and_close_leave_nothing(
    fake_spawn: random.Random, seed: int
) -> None:
    """Clients lease at once or wait (some waits cancelled), hold their worker a while, then
    close it, let it die, or keep it for details; the pool is closed at a random moment (or
    after everyone is done). At no moment are more than ``max_workers`` alive; afterwards,
    with the refill timers fired, none is alive and the pool's state is empty."""
    rng = random.Random(seed)
    fake_spawn.seed(seed)

    async def main() -> None:
        size, cap = rng.choice([1, 2]), rng.choice([1, 2, 3])
        pool = WorkerPool(Limits(), size=size, max_workers=cap)
        pool.start(accelerator_spare=False)
        held: set[WorkerProcess] = set()
        over: list[int] = []

        async def client() -> None:
            await asyncio.sleep(rng.uniform(0, 0.08))
            worker = pool.lease_now() if rng.random() < 0.7 else None
            if worker is None:
                acquiring = asyncio.ensure_future(pool.acquire())
                try:
                    if rng.random() < 0.25:
                        await asyncio.sleep(rng.uniform(0, 0.02))
                        acquiring.cancel()
                    worker = await asyncio.shield(acquiring)
                except (asyncio.CancelledError, WorkerStartError):
                    # As Session._lease does: a worker handed out after all is not kept.
                    acquiring.cancel()
                    with contextlib.suppress(BaseException):
                        await (await acquiring).close()
                    return
            held.add(worker)
            over.append(len(_alive()) - cap)
            await asyncio.sleep(rng.uniform(0, 0.03))
            draw = rng.random()
            if draw < 0.2:
                assert isinstance(worker, FakeWorker)
                worker.die()
            elif draw < 0.4:
                pool.keep(worker, worker.kill)
                await asyncio.sleep(rng.uniform(0, 0.05))
                pool.unkeep(worker)
            await worker.close()
            held.discard(worker)

        clients = [asyncio.ensure_future(client()) for _ in range(rng.randint(3, 12))]
        if rng.random() < 0.5:
            await asyncio.sleep(rng.uniform(0, 0.1))
            await pool.close()
            for task in clients:
                task.cancel()
        for task in clients:
            with contextlib.suppress(BaseException):
                await task
        for worker in list(held):
            await worker.close()
        await asyncio.sleep(REFILL_DELAY_S + 0.05)
        await pool.close()
        await asyncio.sleep(REFILL_DELAY_S + 0.05)
        assert max(over, default=0) <= 0
        assert _alive() == []
        state = pool.state()
        assert (state["leased"], state["idle"], state["starting"], state["waiting"]) == (0,) * 4

    run_async(main())


def test_a_wait_cancelled_right_after_a_wake_up_ends(fake_spawn: random.Random) -> None:
    """A waiting caller cancelled in the loop turn after the pool woke its waiters (another
    caller came or left) ends cancelled. Python 3.11's ``asyncio.wait_for`` returned the wake-up
    then and dropped the cancel: the caller kept its place, took the next free worker, and that
    worker was leased to nobody (``Session._abandon`` had given up on the call) for good."""

    async def main() -> None:
        pool = WorkerPool(Limits(), size=0, max_workers=1)
        held = await pool.acquire()
        first = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0.01)
        second = asyncio.ensure_future(pool.acquire())  # its arrival wakes `first`
        await asyncio.sleep(0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(first, 1.0)
        await held.close()  # the slot goes to `second`, the only caller still waiting
        worker = await asyncio.wait_for(second, 2.0)
        assert pool.state()["handed_out"] == 2 and pool.waiting() == 0
        await worker.close()
        await pool.close()
        assert _alive() == []

    run_async(main())
