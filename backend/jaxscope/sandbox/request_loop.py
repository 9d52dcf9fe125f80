"""The request loop of one session, independent of the transport (websocket or Unix socket).

Each incoming text is a ``RunRequest`` or ``CancelRequest`` as JSON (``REQUEST_ADAPTER``). Bad
JSON or an invalid request is answered by ``run_failed`` ``invalid_request`` (with the ``run_id``
when one could be read). A new run cancels the session's previous one (which ends with
``cancelled``) before starting. Every event goes out as one JSON text (``model_dump_json()``,
which never contains a raw newline, so NDJSON framing is safe).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable

from pydantic import ValidationError

from jaxscope.protocol import (
    REQUEST_ADAPTER,
    CancelRequest,
    EventModel,
    RunFailed,
    RunFinished,
    RunRequest,
)
from jaxscope.sandbox.session import Session

# ``receive`` returns the next request text, or None once the peer has gone.
Receive = Callable[[], Awaitable[str | None]]
Send = Callable[[str], Awaitable[None]]


def run_id_of(text: str) -> str:
    """The ``run_id`` of a (possibly invalid) request, or ``""``."""
    try:
        data = json.loads(text)
    except ValueError:
        return ""
    run_id = data.get("run_id") if isinstance(data, dict) else None
    return run_id[:64] if isinstance(run_id, str) else ""


def parse_request(text: str) -> RunRequest | CancelRequest | RunFailed:
    """The request in ``text``, or the ``invalid_request`` event that answers it."""
    try:
        return REQUEST_ADAPTER.validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = f"invalid request: {where}: {first['msg']}" if where else first["msg"]
        return RunFailed(kind="invalid_request", message=message, run_id=run_id_of(text))


async def serve_requests(receive: Receive, send: Send, session: Session) -> None:
    """Run the requests from ``receive`` on ``session`` until the peer goes; events to ``send``.
    Closes the session (killing its worker) at the end."""
    send_lock = asyncio.Lock()
    closed = False

    async def emit(event: EventModel) -> None:
        if closed:
            return
        async with send_lock:
            await send(event.model_dump_json())

    run_task: asyncio.Task[RunFinished | RunFailed] | None = None
    try:
        while (text := await receive()) is not None:
            request = parse_request(text)
            if isinstance(request, RunFailed):
                await emit(request)
            elif isinstance(request, CancelRequest):
                session.cancel(request.run_id)
            else:
                if run_task is not None and not run_task.done():
                    session.cancel()
                    with contextlib.suppress(Exception):
                        await run_task
                run_task = asyncio.create_task(session.run(request, emit))
    finally:
        closed = True
        if run_task is not None and not run_task.done():
            run_task.cancel()
            with contextlib.suppress(BaseException):
                await run_task
        await session.close()
