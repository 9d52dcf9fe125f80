"""The websocket session ``/api/ws``: JSON requests in, JSON events out, one sandbox session.

Text frames carry ``RunRequest``/``CancelRequest`` JSON (binary frames are read as UTF-8); the
request loop (:func:`jaxscope.sandbox.request_loop.serve_requests`) answers invalid ones with
``invalid_request``, cancels a session's previous run when a new one arrives, and sends every
event as one JSON text frame.
"""

from __future__ import annotations

from starlette.websockets import WebSocket, WebSocketDisconnect

from jaxscope.sandbox.request_loop import serve_requests
from jaxscope.sandbox.session import Session


async def receive_text(websocket: WebSocket) -> str | None:
    """The next text (or UTF-8 binary) frame, or None when the client disconnected. Bytes that
    are not UTF-8 become lone surrogates (``surrogateescape``), which the request loop refuses
    with ``invalid_request``."""
    try:
        message = await websocket.receive()
    except WebSocketDisconnect:
        return None
    if message["type"] == "websocket.disconnect":
        return None
    text = message.get("text")
    if text is None:
        raw = message.get("bytes") or b""
        text = raw.decode("utf-8", errors="surrogateescape")
    return str(text)


async def serve_session(websocket: WebSocket, session: Session) -> None:
    """Run the websocket's requests on ``session`` until the client disconnects."""

    async def receive() -> str | None:
        return await receive_text(websocket)

    await serve_requests(receive, websocket.send_text, session)
