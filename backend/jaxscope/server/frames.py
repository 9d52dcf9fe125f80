"""Events coalesced into websocket frames: a frame is one event's JSON object, or a JSON array of
several events in the order they were sent.

A 20,000-eqn trace streams one ``eqn_recorded`` event per eqn; sent one frame each, the page
paid a message dispatch per event (Chromium's network service, its renderer's event loop) and
the server a websocket send per event, and on this machine's two cores that held the worker back
(page/CLI 1.3-1.5 on ``examples/real/loop_20k.py``, design 0050). Here events that come within
:data:`WINDOW_S` of each other go out together, up to :data:`FRAME_BYTES` a frame; a lone event
still goes out as one object, ``WINDOW_S`` late at most.

Back-pressure is kept: once :data:`FRAME_BYTES` are waiting, :meth:`FrameSender.send` waits for
the frame before it (a client that does not read holds up the run's worker as before, instead of
the server buffering without bound).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

WINDOW_S = 0.01
"""Seconds an event may wait for others to share its frame."""

FRAME_BYTES = 256 * 1024
"""A frame is sent as soon as its events reach this many bytes (UTF-8); it is larger only when it
is one event (an event is at most ``sandbox.worker.MAX_EVENT_LINE_BYTES``)."""


def frame_objects(text: str | bytes) -> list[Any]:
    """The events of one frame as JSON values, in order (for readers outside the page: tests,
    benchmarks). Raises ``json.JSONDecodeError`` on a frame that is not JSON."""
    value = json.loads(text)
    return value if isinstance(value, list) else [value]


def frame_text(texts: list[str]) -> str:
    """The frame for ``texts`` (each one event's JSON object): the object itself for one, a JSON
    array of them for several."""
    return texts[0] if len(texts) == 1 else "[" + ",".join(texts) + "]"


class FrameSender:
    """Sends event texts through ``send_text`` (one websocket) in order, coalesced into frames.

    ``send`` returns at once unless :data:`FRAME_BYTES` are waiting; a timer sends what waits
    :data:`WINDOW_S` after the first of it, :meth:`flush` at once (the request loop calls it
    after an answer to the peer: a detail, a run's end). Events go out in the order ``send``
    queued them (two senders on one socket, a run and a room's relay, interleave; each keeps
    its own order). :meth:`close` drops what was not sent (the socket is going)."""

    def __init__(self, send_text: Callable[[str], Awaitable[None]]) -> None:
        self._send_text = send_text
        self._lock = asyncio.Lock()
        self._pending: list[str] = []
        self._bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Task[None]] = set()
        self._closed = False

    async def send(self, text: str) -> None:
        """Queue one event's JSON text; sent within :data:`WINDOW_S`, or now when the frame is
        full (then this waits for the socket). Raises what the socket raises on that send."""
        if self._closed:
            return
        # Bytes on the wire (UTF-8: the JSON keeps non-ASCII text as it is), and a comma.
        size = (len(text) if text.isascii() else len(text.encode())) + 1
        while self._pending and self._bytes + size > FRAME_BYTES:
            # A frame is over FRAME_BYTES only when it is one event. Checked again after the
            # wait: another sender on this socket (a room's relay) may have queued meanwhile.
            await self.flush()
        self._pending.append(text)
        self._bytes += size
        if self._bytes >= FRAME_BYTES:
            await self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(WINDOW_S, self._on_timer)

    async def flush(self) -> None:
        """Send what waits now, as one frame (after the frame being sent, if any)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        async with self._lock:
            texts, self._pending, self._bytes = self._pending, [], 0
            if texts and not self._closed:
                await self._send_text(frame_text(texts))

    async def send_frame(self, frame: str) -> None:
        """Send ``frame``, a whole frame built once for many sockets (a classroom room's relay:
        ``server/rooms.py``), as it is, after the events that wait."""
        if self._closed:
            return
        await self.flush()
        async with self._lock:
            if not self._closed:
                await self._send_text(frame)

    def _on_timer(self) -> None:
        self._timer = None
        task = asyncio.get_running_loop().create_task(self._flush_quietly())
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _flush_quietly(self) -> None:
        # A socket that closed under the timer's flush: its receive loop ends the session.
        with contextlib.suppress(Exception):
            await self.flush()

    def close(self) -> None:
        """Stop sending: drop what waits and cancel the timer's flushes."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending, self._bytes = [], 0
        for task in list(self._flushes):
            task.cancel()
