"""Classroom mode (design 0044): rooms in which a teacher's page drives its students' pages.

A teacher's socket opens a room (``open_room``) and gets its id and a teacher token; students'
pages open ``/?room=ID`` and join it (``join_room``). The server then

* announces every run the teacher's socket asks for to the room (``room_updated``: exhibit,
  code, options, ``teacher_run``) before the run starts, and relays the run's events, as the
  very texts the teacher's socket was sent, to every student: a student costs no sandbox run.
  The room coalesces them into frames once (as ``server/frames.py`` does for one socket, but
  within :data:`RELAY_WINDOW_S`, up to ``FRAME_BYTES``), and every student's socket sends the
  same frame text as it is: a student costs one send per frame, nothing per event (design 0065);
* keeps the current run's events (up to ``replay_bytes``) for a student that joins late;
* sends the teacher's ``drive_room`` (exhibit, code, options, stepper cursor) to the students,
  only from the socket that holds the room and only with its token (constant-time compare).

Everything is in memory and bounded: at most ``max_rooms`` rooms, ``max_students`` per room, a
student's unsent frames at most ``member_bytes`` (a student that falls further behind is dropped
from the room with ``room_closed``, so a slow page never holds up the teacher or the others). A
room ends when its teacher leaves it (``leave_room`` with the token), ``grace_s`` after the
teacher's socket went without coming back (``open_room`` with the id and token), or once it sat
``idle_s`` without a run or a drive.

From the break-it review (design 0065): a teacher's run is announced only for an exhibit the
server has (an id such as ``constructor`` never reaches a student's page); a socket's joins and
leaves are rate-limited (:data:`JOIN_LEAVE_BURST`, then one per :data:`JOIN_LEAVE_EVERY_S`), and
the teacher hears of them at most every :data:`TELL_TEACHER_S`, with the count alone (its own
code is not echoed back to it); a client at its room cap (or a full server) that opens a room
ends its (or the) oldest room whose teacher's page has gone, instead of being refused until that
room's grace runs out.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field

from jaxscope.protocol import (
    DriveRoomRequest,
    EventModel,
    JoinRoomRequest,
    LeaveRoomRequest,
    OpenRoomRequest,
    RoomClosed,
    RoomOpened,
    RoomRefused,
    RoomRequest,
    RoomUpdated,
    RunOptions,
    RunRequest,
    is_terminal,
)
from jaxscope.sandbox.request_loop import clean_text
from jaxscope.server.frames import FRAME_BYTES, frame_text

MAX_ROOMS = 64
MAX_STUDENTS = 300
# Rooms one client (an address; all of loopback is one) may hold, so that one client opening
# rooms from many sockets cannot take every room of the server.
MAX_ROOMS_PER_CLIENT = 8
GRACE_S = 300.0
IDLE_S = 3 * 3600.0
REPLAY_BYTES = 8 * 1024 * 1024
MEMBER_BYTES = 16 * 1024 * 1024
# A socket's joins and leaves: this many at once, then one per JOIN_LEAVE_EVERY_S.
JOIN_LEAVE_BURST = 10
JOIN_LEAVE_EVERY_S = 2.0
# The teacher's page hears of students joining and leaving at most this often.
TELL_TEACHER_S = 0.5
# The relay's frames wait for more of the teacher's events this long (a socket's own frames wait
# frames.WINDOW_S, 10 ms): every frame costs each student a send, and a student can wait a tenth
# of a second (the run's end and detail answers go at once).
RELAY_WINDOW_S = 0.1

Send = Callable[[str], Awaitable[None]]
# A member's queue holds event texts (sent through the socket's coalescing sender) and whole
# frames (a room's relay, built once for all its students: sent as they are).
_EVENT, _FRAME = False, True


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(
        a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    )


class Member:
    """One socket's outgoing room frames: a bounded queue that :meth:`pump` sends in order."""

    def __init__(self, limit: int) -> None:
        self._frames: collections.deque[tuple[bool, str]] = collections.deque()
        self._bytes = 0
        self._limit = limit
        self._wake = asyncio.Event()
        self.synced: str | None = None  # the teacher run whose events this student has whole

    def push(self, text: str, *, frame: bool = _EVENT) -> bool:
        """Queue ``text`` (one event's JSON, or with ``frame`` a whole frame); False (nothing
        queued) when that would pass the limit."""
        if self._bytes + len(text) > self._limit:
            return False
        self._frames.append((frame, text))
        self._bytes += len(text)
        self._wake.set()
        return True

    def drop_all(self) -> None:
        self._frames.clear()
        self._bytes = 0

    async def pump(self, send: Send, send_frame: Send | None = None) -> None:
        """Send the queued texts until cancelled: events through ``send``, whole frames through
        ``send_frame`` (as they are; without one, each of their events through ``send``)."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._frames:
                frame, text = self._frames.popleft()
                self._bytes -= len(text)
                if not frame:
                    await send(text)
                elif send_frame is not None:
                    await send_frame(text)
                else:
                    for item in _frame_items(text):
                        await send(item)


def _frame_items(frame: str) -> list[str]:
    """The event texts of a frame built by :func:`frame_text` (for a sender without frames)."""
    if not frame.startswith("["):
        return [frame]
    return [json.dumps(item, separators=(",", ":")) for item in json.loads(frame)]


@dataclass(eq=False)
class Room:
    id: str
    token: str
    teacher: Member | None
    owner: str | None = None
    exhibit: str = ""
    code: str = ""
    options: RunOptions = field(default_factory=RunOptions)
    run_id: str | None = None
    cursor: int = -1
    students: set[Member] = field(default_factory=set)
    replay: list[str] = field(default_factory=list)
    replay_bytes: int = 0
    replayable: bool = True
    active_at: float = field(default_factory=time.monotonic)
    grace: asyncio.TimerHandle | None = None
    # When the teacher's page went (None while it is here): the oldest such room goes first
    # when its client (or the server) needs a room.
    left_at: float | None = None
    telling: asyncio.TimerHandle | None = None
    # The teacher's run's events not yet relayed: one frame for every student, built once.
    relay: list[str] = field(default_factory=list)
    relay_bytes: int = 0
    relay_timer: asyncio.TimerHandle | None = None
    # Under the run queue (``bus/rooms.py``) this object is one web replica's part of a room
    # shared through Redis: the room's whole student count and whether its teacher's page is
    # here (on any replica) come from there; None: this room is all in this process.
    headcount: int | None = None
    teacher_here: bool | None = None

    def students_count(self) -> int:
        return len(self.students) if self.headcount is None else self.headcount

    def has_teacher(self) -> bool:
        return self.teacher is not None if self.teacher_here is None else self.teacher_here

    def count(self) -> RoomUpdated:
        """What the teacher's page is told when students come and go: the count and the run,
        not its own code and options back (the page reads ``students`` and ``teacher``)."""
        return RoomUpdated(
            room=self.id,
            exhibit=self.exhibit,
            code="",
            teacher_run=self.run_id,
            cursor=self.cursor,
            students=self.students_count(),
            teacher=self.has_teacher(),
        )

    def update(self, *, replayed: bool = True) -> RoomUpdated:
        return RoomUpdated(
            room=self.id,
            exhibit=self.exhibit,
            code=self.code,
            options=self.options,
            teacher_run=self.run_id,
            cursor=self.cursor,
            students=self.students_count(),
            teacher=self.has_teacher(),
            replayed=replayed,
        )


class RoomRegistry:
    """The server's rooms (``app.state.rooms``); the bounds are attributes a test may lower."""

    def __init__(self, exhibits: Collection[str]) -> None:
        self.exhibits = exhibits
        self.rooms: dict[str, Room] = {}
        self.max_rooms = MAX_ROOMS
        self.max_students = MAX_STUDENTS
        self.max_rooms_per_client = MAX_ROOMS_PER_CLIENT
        self.grace_s = GRACE_S
        self.idle_s = IDLE_S
        self.replay_bytes = REPLAY_BYTES
        self.member_bytes = MEMBER_BYTES

    def sweep(self) -> None:
        """End the rooms idle longer than ``idle_s``."""
        now = time.monotonic()
        for room in list(self.rooms.values()):
            if now - room.active_at > self.idle_s:
                self.close(room, f"the room sat idle for {self.idle_s / 3600:g} h and has ended")

    def close(self, room: Room, message: str) -> None:
        """End ``room``: its students (and a connected teacher) get ``room_closed``."""
        if self.rooms.get(room.id) is not room:
            return
        del self.rooms[room.id]
        if room.grace is not None:
            room.grace.cancel()
        if room.telling is not None:
            room.telling.cancel()
        if room.relay_timer is not None:
            room.relay_timer.cancel()
        text = RoomClosed(room=room.id, message=message).model_dump_json()
        for member in [*room.students, *([room.teacher] if room.teacher else [])]:
            member.synced = None
            member.push(text)
        room.students.clear()
        room.teacher = None
        room.replay = []

    def broadcast(self, room: Room, text: str, *, run: bool = False) -> None:
        """Send ``text`` to every student of ``room`` (``run``: a frame of the run's events,
        only to those that follow its current run whole); a student whose queue is full is
        dropped from the room. What the relay holds goes first (the students' order is the
        teacher's)."""
        if not run:
            self.relay_now(room)
        for member in list(room.students):
            if run and member.synced != room.run_id:
                continue
            if not member.push(text, frame=run):
                self.drop(room, member)

    def relay(self, room: Room, text: str, *, now: bool = False) -> None:
        """Add one event of the teacher's run to the frame being built for the students; it goes
        within :data:`RELAY_WINDOW_S`, at ``FRAME_BYTES``, or ``now``."""
        room.relay.append(text)
        room.relay_bytes += len(text) + 1
        if now or room.relay_bytes >= FRAME_BYTES:
            self.relay_now(room)
        elif room.relay_timer is None:
            room.relay_timer = asyncio.get_running_loop().call_later(
                RELAY_WINDOW_S, self.relay_now, room
            )

    def relay_now(self, room: Room) -> None:
        """Send the frame being built to the students that follow the run."""
        if room.relay_timer is not None:
            room.relay_timer.cancel()
            room.relay_timer = None
        if not room.relay:
            return
        frame = frame_text(room.relay)
        room.relay, room.relay_bytes = [], 0
        self.broadcast(room, frame, run=True)

    def drop(self, room: Room, member: Member) -> None:
        room.students.discard(member)
        member.synced = None
        member.drop_all()
        member.push(
            RoomClosed(
                room=room.id,
                message="this page fell too far behind the room's live stream (a slow "
                "connection?) and stopped following: open the room's link again to rejoin",
            ).model_dump_json()
        )

    def tell_teacher(self, room: Room, *, now: bool = False) -> None:
        """Tell the teacher's page the room's count: ``now``, or once within
        :data:`TELL_TEACHER_S` for however many joins and leaves come meanwhile."""
        if room.teacher is None:
            return
        if now:
            room.teacher.push(room.count().model_dump_json())
            return
        if room.telling is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (shutting down): at once
            room.teacher.push(room.count().model_dump_json())
            return
        room.telling = loop.call_later(TELL_TEACHER_S, self._tell, room)

    def _tell(self, room: Room) -> None:
        room.telling = None
        if self.rooms.get(room.id) is room and room.teacher is not None:
            room.teacher.push(room.count().model_dump_json())

    def free_a_room(self, owner: str | None = None) -> bool:
        """End the oldest room whose teacher's page has gone (of ``owner``'s rooms, when given):
        a teacher that closed its pages does not hold its rooms' places for the whole grace.
        False when there is none."""
        gone = [
            r
            for r in self.rooms.values()
            if r.teacher is None and r.left_at is not None and (owner is None or r.owner == owner)
        ]
        if not gone:
            return False
        oldest = min(gone, key=lambda r: r.left_at or 0.0)
        self.close(
            oldest,
            "the teacher's page left, and a new room was opened in its place: this room has ended",
        )
        return True


class JoinLeaveAllowance:
    """A socket's joins and leaves: :data:`JOIN_LEAVE_BURST` at once, refilled at one per
    :data:`JOIN_LEAVE_EVERY_S`."""

    def __init__(self) -> None:
        self._allowance = float(JOIN_LEAVE_BURST)
        self._allowance_at = time.monotonic()

    def take(self) -> bool:
        """Whether the socket may join or leave now (and count it)."""
        now = time.monotonic()
        self._allowance = min(
            float(JOIN_LEAVE_BURST),
            self._allowance + (now - self._allowance_at) / JOIN_LEAVE_EVERY_S,
        )
        self._allowance_at = now
        if self._allowance < 1.0:
            return False
        self._allowance -= 1.0
        return True


class RoomSession:
    """One socket's part in the rooms (:class:`jaxscope.sandbox.request_loop.Rooms`): at most
    one room at a time, as its teacher or as a student."""

    def __init__(self, registry: RoomRegistry, member: Member, owner: str | None = None) -> None:
        self.registry = registry
        self.member = member
        self.owner = owner  # the client (``app.client_of``), for ``max_rooms_per_client``
        self.room: Room | None = None
        self.teaching = False
        self.allowance = JoinLeaveAllowance()

    def _may_join_or_leave(self) -> bool:
        return self.allowance.take()

    def current(self) -> Room | None:
        """This socket's room, or None once it ended, or this socket was dropped from it
        (fell behind) or another page of the teacher took it over."""
        room = self.room
        if room is not None and (
            self.registry.rooms.get(room.id) is not room
            or (
                room.teacher is not self.member
                if self.teaching
                else self.member not in room.students
            )
        ):
            self.room, self.teaching, room = None, False, None
        return room

    def _refuse(self, request: RoomRequest, message: str) -> None:
        room = clean_text(getattr(request, "room", None) or "", 64)
        self.member.push(
            RoomRefused(room=room, request=request.type, message=message).model_dump_json()
        )

    async def request(self, request: RoomRequest) -> None:
        self.current()
        if isinstance(request, OpenRoomRequest):
            self._open(request)
        elif isinstance(request, (JoinRoomRequest, LeaveRoomRequest)) and not (
            (isinstance(request, LeaveRoomRequest) and request.token is not None)
            or self._may_join_or_leave()
        ):
            self._refuse(
                request,
                "this page joined and left rooms too often: wait a few seconds and try again",
            )
        elif isinstance(request, JoinRoomRequest):
            self._join(request)
        elif isinstance(request, LeaveRoomRequest):
            self._leave(request)
        else:
            self._drive(request)

    def _open(self, request: OpenRoomRequest) -> None:
        registry = self.registry
        registry.sweep()
        if request.room is not None or request.token is not None:
            room = registry.rooms.get(request.room or "")
            if room is None or request.token is None or not _same(request.token, room.token):
                self._refuse(
                    request,
                    "this room has ended, or the token is not its teacher's: start a new room",
                )
                return
            self.leave()
            if room.teacher is not None and room.teacher is not self.member:
                room.teacher.push(
                    RoomClosed(
                        room=room.id, message="another page of the teacher took the room over"
                    ).model_dump_json()
                )
            if room.grace is not None:
                room.grace.cancel()
                room.grace = None
        else:
            if len(registry.rooms) >= registry.max_rooms and not registry.free_a_room():
                self._refuse(
                    request,
                    f"this server already holds {registry.max_rooms} rooms, the most it "
                    "allows: try again once one has ended",
                )
                return
            mine = self.current() if self.teaching else None  # closed below: not counted
            held = sum(
                1 for r in registry.rooms.values() if r.owner == self.owner and r is not mine
            )
            if (
                self.owner is not None
                and held >= registry.max_rooms_per_client
                and not registry.free_a_room(self.owner)
            ):
                self._refuse(
                    request,
                    f"this client already holds {registry.max_rooms_per_client} rooms, the most "
                    "one client may: close one (or wait until a room whose teacher left ends)",
                )
                return
            # A teacher that opens another room closes the one it held (no grace: it chose to).
            held_room = self.current()
            if held_room is not None and self.teaching:
                self.room, self.teaching = None, False
                held_room.teacher = None  # the students are told; this page knows
                registry.close(held_room, "the teacher opened another room: this one has ended")
            self.leave()
            room_id = secrets.token_urlsafe(12)
            room = Room(id=room_id, token=secrets.token_urlsafe(24), teacher=None, owner=self.owner)
            registry.rooms[room_id] = room
        room.teacher = self.member
        room.left_at = None
        room.active_at = time.monotonic()
        self.room, self.teaching = room, True
        self.member.push(
            RoomOpened(
                room=room.id,
                token=room.token,
                max_students=registry.max_students,
                grace_s=registry.grace_s,
            ).model_dump_json()
        )
        registry.tell_teacher(room, now=True)
        registry.broadcast(room, room.update().model_dump_json())

    def _join(self, request: JoinRoomRequest) -> None:
        registry = self.registry
        registry.sweep()
        room = registry.rooms.get(request.room)
        if room is None:
            self._refuse(
                request,
                "no such room: it has ended (its teacher closed it or left) or the link is "
                "mistyped; ask the teacher for the room's link",
            )
            return
        if room is self.room:
            return
        if len(room.students) >= registry.max_students:
            self._refuse(
                request, f"this room is full: it has {registry.max_students} students already"
            )
            return
        self.leave()
        registry.relay_now(room)  # what it held is in the replay below: not sent twice
        room.students.add(self.member)
        self.room, self.teaching = room, False
        whole = room.replayable and room.run_id is not None
        self.member.push(room.update(replayed=whole or room.run_id is None).model_dump_json())
        if whole:
            for text in room.replay:
                self.member.push(text)
            self.member.synced = room.run_id
        registry.tell_teacher(room)

    def _leave(self, request: LeaveRoomRequest) -> None:
        room = self.room
        if room is None or room.id != request.room:
            self._refuse(request, "this page is in no such room")
            return
        if request.token is not None:
            if not self.teaching or not _same(request.token, room.token):
                self._refuse(request, "only the room's teacher can close it")
                return
            self.room, self.teaching = None, False
            self.registry.close(room, "the teacher closed the room")
            return
        self.leave()

    def _drive(self, request: DriveRoomRequest) -> None:
        room = self.current()
        if (
            room is None
            or not self.teaching
            or room.id != request.room
            or not _same(request.token, room.token)
        ):
            self._refuse(request, "only the room's teacher drives it (with its token)")
            return
        if request.exhibit not in self.registry.exhibits:
            self._refuse(request, f"unknown exhibit {clean_text(request.exhibit, 64)!r}")
            return
        room.exhibit, room.code, room.options = request.exhibit, request.code, request.options
        room.cursor = request.cursor
        room.active_at = time.monotonic()
        self.registry.broadcast(room, room.update().model_dump_json())

    async def ran(self, request: RunRequest) -> None:
        room = self.current()
        if room is None or not self.teaching:
            return
        if request.exhibit not in self.registry.exhibits:
            return  # refused by the session; never announced (an id like ``constructor``)
        self.registry.relay_now(room)  # the previous run's last events, before the new run
        room.exhibit, room.code, room.options = request.exhibit, request.code, request.options
        room.run_id, room.cursor = request.run_id, -1
        room.replay, room.replay_bytes, room.replayable = [], 0, True
        room.active_at = time.monotonic()
        for member in room.students:
            member.synced = request.run_id
        self.registry.broadcast(room, room.update().model_dump_json())

    def sent(self, event: EventModel, text: str) -> None:
        room = self.room  # current() without its checks: this is called for every event
        if room is not None and room.teacher is not self.member:
            room = None
        if room is None or not self.teaching or not event.run_id or event.run_id != room.run_id:
            return
        if room.replayable:
            if room.replay_bytes + len(text) <= self.registry.replay_bytes:
                room.replay.append(text)
                room.replay_bytes += len(text)
            else:
                room.replay, room.replay_bytes, room.replayable = [], 0, False
        # An answer or the run's end goes at once, as the teacher's own socket sends it.
        urgent = is_terminal(event) or event.detail_of is not None
        self.registry.relay(room, text, now=urgent)

    def leave(self) -> None:
        """This socket leaves its room: a student is gone; a teacher's room waits ``grace_s``
        for the teacher to come back (``open_room`` with the token), then ends."""
        room, teaching = self.current(), self.teaching
        self.room, self.teaching = None, False
        self.member.synced = None
        if room is None:
            return
        if not teaching:
            room.students.discard(self.member)
            self.registry.tell_teacher(room)
            return
        if room.teacher is not self.member:
            return
        room.teacher = None
        room.left_at = time.monotonic()
        registry = self.registry
        registry.broadcast(room, room.update().model_dump_json())
        with contextlib.suppress(RuntimeError):  # no running loop: the app is shutting down
            room.grace = asyncio.get_running_loop().call_later(
                registry.grace_s,
                registry.close,
                room,
                "the teacher's page left and did not come back: the room has ended",
            )
