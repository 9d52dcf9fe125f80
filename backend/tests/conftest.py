"""Shared fixtures of the backend tests: a sandbox harness (one event loop thread + one worker
pool per test module) and the shared cases folder. No Playwright here (e2e has its own)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from jaxscope.protocol import EventModel, RunRequest
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.settings import Limits

from exhibits.registry import EXHIBITS

CASES = Path("/work/shared/cases")
REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


class SandboxHarness:
    """A real pool and sessions driven from synchronous tests through a loop thread."""

    def __init__(self, limits: Limits, size: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.limits = limits
        self.pool = WorkerPool(limits, size=size)
        self.call(self._start())
        self._n = 0

    async def _start(self) -> None:
        self.pool.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def session(self) -> Session:
        return Session(self.pool, EXHIBITS)

    def run_id(self) -> str:
        self._n += 1
        return f"run-{self._n}"

    async def arun(
        self,
        session: Session,
        code: str,
        exhibit: str = "tracing",
        wall_s: float | None = None,
        run_id: str | None = None,
    ) -> list[EventModel]:
        events: list[EventModel] = []

        async def emit(event: EventModel) -> None:
            events.append(event)

        request = RunRequest(run_id=run_id or self.run_id(), exhibit=exhibit, code=code)
        await session.run(request, emit, wall_s=wall_s)
        return events

    def run(
        self,
        code: str,
        exhibit: str = "tracing",
        session: Session | None = None,
        wall_s: float | None = None,
    ) -> list[EventModel]:
        """Run ``code`` in ``session`` (a fresh one, closed after, when None)."""
        own = session is None
        sess = session or self.session()
        try:
            return self.call(self.arun(sess, code, exhibit, wall_s))
        finally:
            if own:
                self.call(sess.close())

    def close(self) -> None:
        self.call(self.pool.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxHarness]:
    harness = SandboxHarness(Limits(wall_s=10.0, cpu_s=10.0), size=2)
    yield harness
    harness.close()


def assert_one_terminal(events: list[EventModel]) -> EventModel:
    """Exactly one terminal event, last; seqs 0..n-1 in order; one run_id. Returns it."""
    assert events, "no events"
    terminals = [e for e in events if e.type in ("run_finished", "run_failed")]
    assert len(terminals) == 1, [e.type for e in events]
    assert events[-1] is terminals[0]
    assert [e.seq for e in events] == list(range(len(events)))
    assert len({e.run_id for e in events}) == 1
    return terminals[0]
