"""A pool of warm sandbox workers (asyncio, in the server or CLI process).

The pool keeps ``size`` idle workers warm (JAX imported, backend up, probes imported). Each worker
it hands out is replaced in the background; a caller arriving while the pool is still warming
waits for the first ready worker. With ``size=0`` workers are spawned on demand (the CLI).
Workers are never returned to the pool: a session keeps its worker and kills it at the end, so no
state leaks from one user to another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from jaxscope.sandbox.worker import WorkerProcess, WorkerStartError
from jaxscope.settings import Limits

log = logging.getLogger(__name__)


class WorkerPool:
    """``size`` warm idle workers with ``limits``; :meth:`acquire` hands one out."""

    def __init__(self, limits: Limits, size: int = 2) -> None:
        self.limits = limits
        self.size = size
        self._idle: asyncio.Queue[WorkerProcess | BaseException] = asyncio.Queue()
        self._starting: set[asyncio.Task[None]] = set()
        self._closed = False
        self.spawned = 0
        self.handed_out = 0

    def start(self) -> None:
        """Begin warming ``size`` workers in the background (call inside the event loop)."""
        self._fill()

    def _starting_count(self) -> int:
        # A start task that has just put its worker may still be in the set (its done-callback
        # runs after the woken acquirer), so count only the unfinished ones.
        return sum(not task.done() for task in self._starting)

    def _fill(self) -> None:
        while not self._closed and self._idle.qsize() + self._starting_count() < self.size:
            self._spawn()

    def _spawn(self) -> None:
        self.spawned += 1
        task = asyncio.ensure_future(self._start_one())
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def _start_one(self) -> None:
        try:
            worker = await WorkerProcess.spawn(self.limits)
        except Exception as exc:
            log.error("worker failed to start: %s", exc)
            self._idle.put_nowait(exc)
            return
        if self._closed:
            await worker.close()
            return
        self._idle.put_nowait(worker)

    async def acquire(self) -> WorkerProcess:
        """A warm worker (waits while the pool warms up). Raises :class:`WorkerStartError` when
        the worker that was started for this call could not start."""
        while True:
            if self._closed:
                raise WorkerStartError("the worker pool is closed")
            if self._idle.empty() and not self._starting_count():
                self._spawn()
            item = await self._idle.get()
            self._fill()
            if isinstance(item, BaseException):
                raise WorkerStartError(str(item)) from item
            if item.alive:
                self.handed_out += 1
                return item
            await item.close()

    def state(self) -> dict[str, int]:
        """``size``, ``idle`` and ``starting`` workers, and totals ``spawned``/``handed_out``."""
        return {
            "size": self.size,
            "idle": self._idle.qsize(),
            "starting": self._starting_count(),
            "spawned": self.spawned,
            "handed_out": self.handed_out,
        }

    async def close(self) -> None:
        """Stop warming and kill every idle worker."""
        self._closed = True
        for task in list(self._starting):
            task.cancel()
        for task in list(self._starting):
            with contextlib.suppress(BaseException):
                await task
        while not self._idle.empty():
            item = self._idle.get_nowait()
            if isinstance(item, WorkerProcess):
                await item.close()
