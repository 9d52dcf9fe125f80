"""The request loop of one session, independent of the transport (websocket or Unix socket).

Each incoming text is a ``RunRequest``, ``CancelRequest``, ``DetailRequest``, ``FollowRequest``
or a room request (``open_room``, ``join_room``, ``leave_room``, ``drive_room``) as JSON
(``REQUEST_ADAPTER``); a follow goes to the transport's ``follow`` (``jaxscope watch``:
``server/watch.py``), and without one is answered by a ``watched_file_changed`` that says no
file is watched; a room request goes to the transport's ``rooms`` (classroom mode:
``server/rooms.py``), which also sees every run request and every event, and without one is
answered by ``room_refused``.
Whatever else arrives is answered by ``run_failed`` ``invalid_request`` (with the ``run_id`` when
one could be read, its lone surrogates replaced so that the answer always serializes), and the
connection and the session's runs carry on: text that is not JSON, JSON nested thousands deep,
text with a lone surrogate (a transport decodes bytes that are not UTF-8 to such surrogates:
``surrogateescape``), unknown fields or request types, code longer than ``MAX_CODE_CHARS``.

A new run cancels the session's previous one (which ends with ``cancelled``) before starting. A
cancel is matched to the run it names even when it arrives right behind that run's request,
before the session has made the run current: the run then ends with ``cancelled`` without a
worker seeing it. Every event goes out as one JSON text (``model_dump_json()``, which never
contains a raw newline, so NDJSON framing is safe).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable
from typing import Protocol

from pydantic import ValidationError

from jaxscope.protocol import (
    MAX_CODE_CHARS,
    REQUEST_ADAPTER,
    AnyRequest,
    CancelRequest,
    DetailFailed,
    DetailRequest,
    DriveRoomRequest,
    EventModel,
    FollowRequest,
    JoinRoomRequest,
    LeaveRoomRequest,
    OpenRoomRequest,
    ResumeRequest,
    RoomRefused,
    RoomRequest,
    RunFailed,
    RunFinished,
    RunRequest,
    WatchedFileChanged,
)
from jaxscope.sandbox.session import Session

# ``receive`` returns the next request text, or None once the peer has gone.
Receive = Callable[[], Awaitable[str | None]]
Send = Callable[[str], Awaitable[None]]
# Sends what ``Send`` holds back (a websocket's coalesced frame, ``server/frames.py``) now.
Flush = Callable[[], Awaitable[None]]
# ``follow(True)`` starts sending the watched file to the peer, ``follow(False)`` stops.
Follow = Callable[[bool], Awaitable[None]]
NO_ROOMS = "this server has no classroom rooms (a hosted pool's sessions do not share runs)"


class Rooms(Protocol):
    """Classroom mode's side of a session (``server/rooms.py``): room requests, and the run
    requests and events of a socket that may be a room's teacher."""

    async def request(self, request: RoomRequest) -> None:
        """Carry out a room request of this socket (answers go to the socket)."""

    async def ran(self, request: RunRequest) -> None:
        """This socket asked for a run (called before the run starts)."""

    def sent(self, event: EventModel, text: str) -> None:
        """This socket was sent ``event`` (as ``text``): relayed when it drives a room."""


NO_RESUME = (
    "this server keeps no run streams (only `serve --queue` does): the run ended with the "
    "connection; run it again"
)
NOT_WATCHING = (
    "this server watches no file: start it with `jaxscope watch FILE --exhibit ID` to follow one"
)

_SURROGATE = re.compile("[\ud800-\udfff]")
# The longest piece of a request (a field name, a run_id) quoted back in an answer.
_QUOTE_CHARS = 64
# Detail requests a session may have waiting for an answer; more are refused at once.
MAX_PENDING_DETAILS = 64
# The longest ``invalid_request`` message (an answer stays far below the 1 MiB event limit).
_MESSAGE_CHARS = 1000


def clean_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, lone surrogates replaced by U+FFFD: always
    serializable as UTF-8 JSON."""
    return _SURROGATE.sub("\ufffd", text[:limit])


def _fields_of(text: str) -> dict[str, object]:
    """The JSON object of a (possibly invalid) request, or ``{}``."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read
        return {}
    return data if isinstance(data, dict) else {}


def _quoted(value: object) -> str | None:
    """A request's string field, cleaned (:func:`clean_text`); None for anything else."""
    return clean_text(value, _QUOTE_CHARS) if isinstance(value, str) else None


def _invalid(message: str, text: str) -> RunFailed | DetailFailed:
    """The answer to an invalid request: ``detail_failed`` for a detail request (a
    ``run_failed`` would be a second terminal event of a run that already ended: break-it
    review), ``run_failed`` ``invalid_request`` for anything else."""
    cleaned = clean_text(message, _MESSAGE_CHARS)
    fields = _fields_of(text)  # read once for both answers
    run_id = _quoted(fields.get("run_id")) or ""
    if fields.get("type") == "detail":
        return DetailFailed(
            gone=False, message=cleaned, run_id=run_id, detail_id=_quoted(fields.get("detail_id"))
        )
    return RunFailed(kind="invalid_request", message=cleaned, run_id=run_id)


def parse_request(
    text: str,
) -> AnyRequest | RunFailed | DetailFailed:
    """The request in ``text``, or the event that answers it when it is invalid
    (:func:`_invalid`)."""
    if _SURROGATE.search(text):
        return _invalid("invalid request: the text is not valid UTF-8 (a lone surrogate)", text)
    try:
        request = REQUEST_ADAPTER.validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(clean_text(str(p), _QUOTE_CHARS) for p in first["loc"])
        message = f"invalid request: {where}: {first['msg']}" if where else first["msg"]
        return _invalid(message, text)
    except Exception as exc:  # never seen; the request is refused, the connection kept
        return _invalid(f"invalid request ({type(exc).__name__})", text)
    if isinstance(request, RunRequest) and len(request.code) > MAX_CODE_CHARS:
        # Also checked by the session; refused here so that the hosted relay never forwards it.
        return _invalid(
            f"the code is {len(request.code):,} characters long; jaxscope accepts at most "
            f"{MAX_CODE_CHARS:,}",
            text,
        )
    return request


async def serve_requests(
    receive: Receive,
    send: Send,
    session: Session,
    follow: Follow | None = None,
    rooms: Rooms | None = None,
    flush: Flush | None = None,
) -> None:
    """Run the requests from ``receive`` on ``session`` until the peer goes; events to ``send``;
    follow requests to ``follow`` (None: no file is watched), room requests to ``rooms`` (None:
    refused). ``flush``: called after an event that answers the peer (a detail's answer or
    refusal, a run's terminal event) and after one the page shows at once
    (``EventBase.shown_at_once``), so that none of these waits for others to share its frame.
    Closes the session (killing its worker) at the end."""
    send_lock = asyncio.Lock()
    closed = False

    async def emit(event: EventModel) -> None:
        if closed:
            return
        text = event.model_dump_json()
        async with send_lock:
            await send(text)
            answers = isinstance(
                event, (DetailFailed, RunFinished, RunFailed, RoomRefused, WatchedFileChanged)
            )
            if flush is not None and (
                answers or event.detail_of is not None or event.shown_at_once
            ):
                await flush()
        if rooms is not None:
            rooms.sent(event, text)

    async def run_one(request: RunRequest, cancelled: asyncio.Event) -> RunFinished | RunFailed:
        """``session.run(request)``, ended early by ``cancelled``: set by a cancel that found
        the run not yet current in the session (its task had not started, or it waits for the
        session's lock), it is passed on to the session as soon as the run is current."""
        if cancelled.is_set():
            failed = RunFailed(
                kind="cancelled", message="the run was cancelled", run_id=request.run_id
            )
            await emit(failed)
            return failed
        run = asyncio.ensure_future(session.run(request, emit))
        try:
            waiting = asyncio.ensure_future(cancelled.wait())
            try:
                await asyncio.wait({run, waiting}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiting.cancel()
            while not run.done() and not session.cancel(request.run_id):
                await asyncio.wait({run}, timeout=0.01)
            return await run
        finally:
            if not run.done():  # this task was cancelled: the connection closed
                run.cancel()
                with contextlib.suppress(BaseException):
                    await run

    detail_tasks: set[asyncio.Task[None]] = set()
    run_task: asyncio.Task[RunFinished | RunFailed] | None = None
    run_id = ""  # of run_task
    cancelled = asyncio.Event()  # run_task's: a cancel the session did not take yet
    try:
        while (text := await receive()) is not None:
            request = parse_request(text)
            if isinstance(request, (RunFailed, DetailFailed)):
                await emit(request)
            elif isinstance(request, FollowRequest):
                if follow is not None:
                    await follow(request.follow)
                elif request.follow:
                    await emit(
                        WatchedFileChanged(path="", exhibit="", code=None, problem=NOT_WATCHING)
                    )
            elif isinstance(
                request, (OpenRoomRequest, JoinRoomRequest, LeaveRoomRequest, DriveRoomRequest)
            ):
                if rooms is not None:
                    await rooms.request(request)
                else:
                    await emit(
                        RoomRefused(
                            room=clean_text(getattr(request, "room", None) or "", _QUOTE_CHARS),
                            request=request.type,
                            message=NO_ROOMS,
                        )
                    )
            elif isinstance(request, DetailRequest):
                if len(detail_tasks) >= MAX_PENDING_DETAILS:
                    # A flood of requests is answered at once, not queued without bound.
                    await emit(
                        DetailFailed(
                            run_id=clean_text(request.run_id, _QUOTE_CHARS),
                            detail_id=clean_text(request.detail_id, _QUOTE_CHARS),
                            gone=False,
                            transient=True,
                            message=f"more than {MAX_PENDING_DETAILS} detail requests are "
                            "waiting: ask again once they are answered",
                        )
                    )
                    continue
                # Answered beside the run loop (one at a time, by the session's lock), so that
                # the page's prefetch never holds up a cancel or a new run.
                task = asyncio.create_task(session.detail(request, emit))
                detail_tasks.add(task)
                task.add_done_callback(detail_tasks.discard)
            elif isinstance(request, ResumeRequest):
                await emit(
                    RunFailed(
                        kind="worker_crashed",
                        message=NO_RESUME,
                        run_id=clean_text(request.run_id, _QUOTE_CHARS),
                    )
                )
            elif isinstance(request, CancelRequest):
                if (
                    not session.cancel(request.run_id)
                    and request.run_id == run_id
                    and run_task is not None
                    and not run_task.done()
                ):
                    cancelled.set()
            else:
                if run_task is not None and not run_task.done():
                    session.cancel()
                    cancelled.set()
                    with contextlib.suppress(Exception):
                        await run_task
                if rooms is not None:
                    await rooms.ran(request)
                run_id, cancelled = request.run_id, asyncio.Event()
                run_task = asyncio.create_task(run_one(request, cancelled))
    finally:
        closed = True
        for task in list(detail_tasks):
            task.cancel()
        if run_task is not None and not run_task.done():
            run_task.cancel()
            with contextlib.suppress(BaseException):
                await run_task
        await session.close()
