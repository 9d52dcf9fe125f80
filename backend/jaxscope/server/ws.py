"""The websocket session ``/api/ws``: JSON requests in, JSON events out, one sandbox session.

Text frames carry ``RunRequest``/``CancelRequest``/``DetailRequest``/``FollowRequest`` and room
JSON (binary frames are read as UTF-8); the request loop
(:func:`jaxscope.sandbox.request_loop.serve_requests`) answers invalid ones with
``invalid_request``, cancels a session's previous run when a new one arrives, and sends every
event as JSON: a text frame holds one event's object, or an array of events that came
within 10 ms of each other (``server/frames.py``). Classroom mode's room requests go to the
server's rooms (``server/rooms.py``): a teacher's runs are relayed from here to its students. Under
``jaxscope watch`` a page that follows the watched file also gets its ``watched_file_changed``
events on the same socket (one sender orders all frames).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from starlette.websockets import WebSocket, WebSocketDisconnect

from jaxscope.protocol import WatchedFileChanged
from jaxscope.sandbox.request_loop import serve_requests
from jaxscope.sandbox.session import Session
from jaxscope.server.frames import FrameSender
from jaxscope.server.rooms import Member, RoomRegistry, RoomSession
from jaxscope.server.watch import WatchedFile


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


async def serve_session(
    websocket: WebSocket,
    session: Session,
    watched: WatchedFile | None = None,
    rooms: RoomRegistry | None = None,
    owner: str | None = None,
) -> None:
    """Run the websocket's requests on ``session`` until the client disconnects; a follow
    request subscribes the socket to ``watched`` (None: the server watches no file); room
    requests go to ``rooms`` (classroom mode, ``server/rooms.py``; None: refused), whose frames
    for this socket one task sends in order; ``owner``: the client, for the rooms it may hold."""
    # One sender orders all of the socket's events (runs, room relays, watched-file changes).
    frames = FrameSender(websocket.send_text)
    unfollow: Callable[[], None] | None = None

    async def receive() -> str | None:
        return await receive_text(websocket)

    send = frames.send

    async def push(event: WatchedFileChanged) -> None:
        await send(event.model_dump_json())

    async def follow(on: bool) -> None:
        nonlocal unfollow
        assert watched is not None
        if on and unfollow is None:
            unfollow = await watched.follow(push)
        elif not on and unfollow is not None:
            unfollow()
            unfollow = None

    member: RoomSession | None = None
    pump: asyncio.Task[None] | None = None
    if rooms is not None:
        member = RoomSession(rooms, Member(rooms.member_bytes), owner)
        pump = asyncio.create_task(member.member.pump(send, frames.send_frame))
    try:
        await serve_requests(
            receive, send, session, follow if watched is not None else None, member, frames.flush
        )
    finally:
        frames.close()
        if unfollow is not None:
            unfollow()
        if member is not None:
            member.leave()
        if pump is not None:
            pump.cancel()
            with contextlib.suppress(BaseException):
                await pump
