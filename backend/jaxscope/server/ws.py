"""The websocket session ``/api/ws``: JSON requests in, JSON events out, one sandbox session.

Each text frame is a ``RunRequest`` or ``CancelRequest`` (validated with ``REQUEST_ADAPTER``).
Bad JSON or an invalid request is answered by ``run_failed`` ``invalid_request`` (with the
``run_id`` when one could be read). A new run cancels the session's previous one (which ends with
``cancelled``) before starting. Events go out as text frames (``model_dump_json()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from pydantic import ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect

from jaxscope.protocol import (
    REQUEST_ADAPTER,
    CancelRequest,
    EventModel,
    RunFailed,
    RunFinished,
)
from jaxscope.sandbox.session import Session

log = logging.getLogger(__name__)


def _run_id_of(text: str) -> str:
    """The ``run_id`` of a (possibly invalid) request, or ``""``."""
    try:
        data = json.loads(text)
    except ValueError:
        return ""
    run_id = data.get("run_id") if isinstance(data, dict) else None
    return run_id[:64] if isinstance(run_id, str) else ""


def _describe(exc: ValidationError | ValueError) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"invalid request: {where}: {first['msg']}" if where else first["msg"]
    return f"invalid request: {exc}"


async def serve_session(websocket: WebSocket, session: Session) -> None:
    """Run the websocket's requests on ``session`` until the client disconnects."""
    send_lock = asyncio.Lock()
    closed = False

    async def emit(event: EventModel) -> None:
        if closed:
            return
        async with send_lock:
            await websocket.send_text(event.model_dump_json())

    run_task: asyncio.Task[RunFinished | RunFailed] | None = None
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            text = message.get("text")
            if text is None:
                raw = message.get("bytes") or b""
                text = raw.decode("utf-8", errors="replace")
            try:
                request = REQUEST_ADAPTER.validate_json(text)
            except ValidationError as exc:
                await emit(
                    RunFailed(
                        kind="invalid_request", message=_describe(exc), run_id=_run_id_of(text)
                    )
                )
                continue
            if isinstance(request, CancelRequest):
                session.cancel(request.run_id)
                continue
            if run_task is not None and not run_task.done():
                session.cancel()
                with contextlib.suppress(Exception):
                    await run_task
            run_task = asyncio.create_task(session.run(request, emit))
    except WebSocketDisconnect:
        pass
    finally:
        closed = True
        if run_task is not None and not run_task.done():
            run_task.cancel()
            with contextlib.suppress(BaseException):
                await run_task
        await session.close()
