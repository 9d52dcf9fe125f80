"""A run's queue reporter ends when the run got its worker even if its ``emit`` swallows the
cancellation (design 0071): found by ``bench/load.py --queue``, where 1-4 runs in 300 stayed
"queued" for good on a pool host, its taker awaiting a reporter task that was "cancelling" but
still looping (a Redis write cut by the cancel and retried). No worker, no Redis: a stand-in
pool and an ``emit`` that catches ``CancelledError``."""

from __future__ import annotations

import asyncio
from typing import Any

from jaxscope.protocol import EventModel, RunQueued, RunRequest
from jaxscope.sandbox.session import Session

from exhibits.registry import EXHIBITS
from testkit import run_async


class StandInPool:
    """What ``Session._report_queue`` reads of a pool: a full pool, the run first in line."""

    kind = "jax"

    def queue_position(self, ticket: object) -> int:
        return 1

    def is_eligible(self, ticket: object) -> bool:
        return True

    def estimate_s(self, position: int) -> float:
        return 1.0

    def must_wait(self, position: int) -> bool:
        return True

    def waiting(self) -> int:
        return 1


def test_the_reporter_ends_when_the_run_got_its_worker_though_emit_swallows_the_cancel() -> None:
    sent: list[EventModel] = []
    inside = asyncio.Event()

    async def swallowing_emit(event: EventModel) -> None:
        sent.append(event)
        inside.set()
        try:
            await asyncio.sleep(0.5)  # a write in flight when the run gets its worker
        except asyncio.CancelledError:
            pass  # as a client that retries a command cut by a cancel does

    async def scenario() -> None:
        session = Session(StandInPool(), EXHIBITS)  # type: ignore[arg-type]
        request = RunRequest(run_id="r1", exhibit="tracing", code="x = 1\n")
        done = asyncio.Event()
        pool: Any = StandInPool()
        reporting = asyncio.ensure_future(
            session._report_queue(pool, request, swallowing_emit, object(), done)
        )
        await asyncio.wait_for(inside.wait(), 5)
        done.set()  # what _lease does once the worker came: set, cancel, await
        reporting.cancel()
        await asyncio.wait_for(reporting, 5)  # before the fix: a TimeoutError here

    run_async(scenario())
    assert len(sent) == 1 and isinstance(sent[0], RunQueued) and sent[0].reason == "pool_full"
