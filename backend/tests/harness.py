"""Helpers of the backend tests: a sandbox harness (one event loop thread driving a real worker
pool and sessions from synchronous tests), event-stream assertions, websocket helpers, paths.

A module of the ``tests`` package (not ``conftest``): ``e2e/conftest.py`` is also a top-level
``conftest`` when the whole suite runs, so importing names from a conftest would be ambiguous."""

from __future__ import annotations

import asyncio
import json
import threading
import weakref
from collections import deque
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from jaxscope.protocol import EVENT_ADAPTER, EventModel, RunRequest
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.server.frames import frame_objects
from jaxscope.settings import Limits

from exhibits.registry import EXHIBITS

# Real user problems with their right values (copied from the shared cases: cases/README.md).
CASES = Path(__file__).resolve().parents[2] / "cases"
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
        self.call(self._drain())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    async def _drain(self) -> None:
        """Let background clean-ups (killed workers being reaped) finish before the loop ends,
        so no subprocess transport outlives it."""
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current]
        if pending:
            await asyncio.wait(pending, timeout=10)


def assert_one_terminal(events: list[EventModel]) -> EventModel:
    """Exactly one terminal event, last; seqs 0..n-1 in order; one run_id. Returns it."""
    assert events, "no events"
    terminals = [e for e in events if e.type in ("run_finished", "run_failed")]
    assert len(terminals) == 1, [e.type for e in events]
    assert events[-1] is terminals[0]
    assert [e.seq for e in events] == list(range(len(events)))
    assert len({e.run_id for e in events}) == 1
    return terminals[0]


def run_msg(run_id: str, code: str, exhibit: str = "tracing") -> str:
    """A ``RunRequest`` as the JSON text a client sends."""
    return json.dumps({"type": "run", "run_id": run_id, "exhibit": exhibit, "code": code})


def frame_events(text: str | bytes) -> list[EventModel]:
    """The events of one websocket text frame: one event's object, or an array of events the
    server coalesced (``jaxscope.server.frames``), each validated as the page would take it."""
    return [EVENT_ADAPTER.validate_json(json.dumps(item)) for item in frame_objects(text)]


_UNREAD: weakref.WeakKeyDictionary[Any, deque[EventModel]] = weakref.WeakKeyDictionary()


def next_event(ws: Any) -> EventModel:
    """The next event from a test websocket: the rest of the last frame read, or the next
    frame's first."""
    unread = _UNREAD.setdefault(ws, deque())
    while not unread:
        unread.extend(frame_events(ws.receive_text()))
    return unread.popleft()


def collect(ws: Any, run_id: str, *, queued: bool = False) -> list[EventModel]:
    """Events of ``run_id`` read from a test websocket, up to and including its terminal one;
    ``run_queued`` (not a step of the run: the page's word that it waits for a worker, e.g. the
    first start of a worker template, design 0053) only with ``queued``."""
    events = []
    while True:
        event = next_event(ws)
        if event.run_id != run_id or (event.type == "run_queued" and not queued):
            continue
        events.append(event)
        if event.type in ("run_finished", "run_failed"):
            return events
