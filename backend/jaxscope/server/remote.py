"""The web tier's side of the hosted pool: relay one websocket to one Unix-socket session.

Used when ``jaxscope serve --pool-socket PATH`` runs without local workers (docker-compose). The
web tier still validates every request (``REQUEST_ADAPTER``, answering invalid ones itself) and
re-validates every event (``EVENT_ADAPTER``) before forwarding it, and when the pool connection is
lost it ends a run still in flight with ``run_failed`` ``worker_crashed`` — so the browser sees
exactly one terminal event per run whatever happens behind the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from pydantic import ValidationError
from starlette.websockets import WebSocket

from jaxscope.protocol import EVENT_ADAPTER, DetailFailed, EventModel, RunFailed, is_terminal
from jaxscope.sandbox.request_loop import parse_request
from jaxscope.sandbox.worker import MAX_EVENT_LINE_BYTES
from jaxscope.server.frames import FrameSender
from jaxscope.server.ws import receive_text


async def relay_session(websocket: WebSocket, socket_path: Path) -> None:
    """Relay an accepted websocket to a new session on the pool at ``socket_path``."""
    # Frames as the local websocket's (server/frames.py): one event, or an array of several.
    frames = FrameSender(websocket.send_text)
    # run_id -> the seq the next event of that run gets (runs without a terminal event yet).
    in_flight: dict[str, int] = {}

    async def emit(event: EventModel) -> None:
        await frames.send(event.model_dump_json())
        if event.detail_of is not None or isinstance(event, DetailFailed) or is_terminal(event):
            await frames.flush()  # an answer to the page never waits for others to share it

    async def end_in_flight(message: str) -> None:
        for run_id, seq in list(in_flight.items()):
            await emit(RunFailed(kind="worker_crashed", message=message, run_id=run_id, seq=seq))
        in_flight.clear()

    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    unreachable = ""
    try:
        reader, writer = await asyncio.open_unix_connection(
            # The pool re-serialises each event (client run_id, seq): leave a margin.
            str(socket_path),
            limit=2 * MAX_EVENT_LINE_BYTES,
        )
    except OSError as exc:
        unreachable = f"the worker pool at {socket_path} is not reachable ({exc.strerror})"

    async def pump_events() -> None:
        assert reader is not None
        while True:
            try:
                line = await reader.readline()
            except (ValueError, ConnectionError):
                line = b""
            if not line:
                await end_in_flight("the connection to the worker pool was lost")
                return
            try:
                event = EVENT_ADAPTER.validate_json(line)
            except ValidationError:
                await end_in_flight("the worker pool sent a line that is not a protocol event")
                return
            if is_terminal(event):
                in_flight.pop(event.run_id, None)
            elif event.run_id in in_flight:
                # An answer to a detail request carries an earlier seq (its summary's, or 0 for
                # a refusal while the run runs): the next seq is past the highest seen.
                in_flight[event.run_id] = max(in_flight[event.run_id], event.seq + 1)
            await emit(event)

    pump = asyncio.create_task(pump_events()) if reader is not None else None
    try:
        while (text := await receive_text(websocket)) is not None:
            request = parse_request(text)
            if isinstance(request, (RunFailed, DetailFailed)):
                await emit(request)
                continue
            if writer is None or (pump is not None and pump.done()):
                if request.type == "run":
                    reason = (
                        unreachable
                        if writer is None
                        else "the connection to the worker pool was lost"
                    )
                    await emit(
                        RunFailed(kind="worker_crashed", message=reason, run_id=request.run_id)
                    )
                continue
            if request.type == "run":
                in_flight.setdefault(request.run_id, 0)
            writer.write(request.model_dump_json().encode() + b"\n")
            with contextlib.suppress(ConnectionError):
                await writer.drain()
    finally:
        frames.close()
        if writer is not None:
            writer.close()
        if pump is not None:
            pump.cancel()
            with contextlib.suppress(BaseException):
                await pump
