"""Classroom mode on the run queue (design 0072): a room shared by every web replica.

Under ``serve --queue`` a teacher's page and its students' pages may reach different web replicas.
A room's state lives in Redis (:func:`room_key`: exhibit, code, options, the teacher's run and its
queue key, stepper cursor, whether the teacher's page is here and which socket holds the room,
the student count, summed from each live replica's own ``n:<replica>``, a hash of the teacher
token), and every change is an entry of its log
(:func:`log_key`): ``u`` (the state, as JSON), ``n`` (the student count) or ``x`` (the room ended,
with the message). A replica with a member of a room (its teacher, or a student) keeps one
:class:`~jaxscope.server.rooms.Room` for it and one reader task (:class:`_Local`), which

* follows the log: a state change is sent to the replica's students (``room_updated``), a count to
  its teacher (at most every ``TELL_TEACHER_S``), an end to everyone here;
* while the replica has students, reads the teacher's run from the run's own event stream, the one
  the pool host writes and the teacher's socket reads (a run's events are published once, by its
  host): each event is validated once per replica, and the replica's students are sent the same
  frame text, built once (``RoomRegistry.relay``, as without the queue). A replica's first student
  of a room reads the run from its start; later ones get the replica's replay.

So a run costs Redis one stream however many students follow it, a replica one read of it, and a
student one send per frame. The bounds and the break-it rules are those of ``server/rooms.py``:
``max_rooms`` (the server's, counted in Redis), ``max_rooms_per_client``, ``max_students``; an
exhibit the server lacks is never announced; joins and leaves are rate-limited per socket; the
teacher hears the count, never its own code back; a client at its cap ends its oldest room whose
teacher's page has gone. The room ends when the teacher closes it, ``grace_s`` after its page
went (the hash's TTL: each replica's reader sees the hash gone), or after ``idle_s`` without a run
or a drive (the same TTL, renewed by both).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError

from jaxscope.bus.jobs import HOST_TTL_S, PREFIX, events_key
from jaxscope.bus.store import Redis, RedisError, stop_task
from jaxscope.protocol import (
    EVENT_ADAPTER,
    ROOM_ID_PATTERN,
    DetailFailed,
    DriveRoomRequest,
    JoinRoomRequest,
    LeaveRoomRequest,
    OpenRoomRequest,
    RoomClosed,
    RoomOpened,
    RoomRefused,
    RoomRequest,
    RunOptions,
    RunRequest,
    is_terminal,
)
from jaxscope.sandbox.request_loop import clean_text
from jaxscope.server.rooms import JoinLeaveAllowance, Member, Room, RoomRegistry

log = logging.getLogger(__name__)

ROOMS = f"{PREFIX}rooms"  # sorted set: every room's id by its opening time
LOG_MAXLEN = 1000
# How long a replica's reader blocks on Redis before it looks again (a first student of a room on
# this replica waits at most this for the run to start streaming).
BLOCK_MS = 300
# A reader that cannot reach Redis this long ends the room on this replica, saying so.
DOWN_S = 10.0

ENDED_GRACE = "the teacher's page left and did not come back: the room has ended"
ENDED_IDLE = "the room sat idle and has ended"
TAKEN_OVER = "another page of the teacher took the room over"
CLOSED = "the teacher closed the room"
EVICTED = "the teacher's page left, and a new room was opened in its place: this room has ended"
STOPPING = "this web server is stopping: open the room's link again to follow it on another"
UNREACHABLE = "the run queue (Redis) stopped answering: this page stopped following the room"
NOT_A_ROOM_ID = (
    "not a room id (a room's id is 8 to 64 letters, digits, '-' or '_'): the link is "
    "mistyped; ask the teacher for the room's link"
)


# KEYS: the room's hash; ARGV: +1 or -1, this replica's name, the most students (a join past it
# is refused: -1; a negative most: none), the prefix of the replicas' heartbeat keys. Each
# replica counts its own students (the hash's field ``n:<replica>``) and the room's count is the
# sum over the replicas alive (their heartbeat, :func:`web_key`, not expired; the caller is
# alive): a replica that died (SIGKILL, its machine lost) cannot take its students out of the
# count, and those students, joining again on another replica, are counted once, not twice. The
# new count, or nil when the room has ended (a count must never bring back the hash of a room
# that ended meanwhile).
_COUNT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local mine = 'n:' .. ARGV[2]
local others = 0
local flat = redis.call('HGETALL', KEYS[1])
for i = 1, #flat, 2 do
  local field = flat[i]
  if string.sub(field, 1, 2) == 'n:' and field ~= mine then
    if redis.call('EXISTS', ARGV[4] .. string.sub(field, 3)) == 1 then
      others = others + (tonumber(flat[i + 1]) or 0)
    end
  end
end
local n = tonumber(redis.call('HGET', KEYS[1], mine) or '0') or 0
local by = tonumber(ARGV[1])
local most = tonumber(ARGV[3])
if by > 0 and most >= 0 and others + n >= most then return -1 end
n = math.max(n + by, 0)
redis.call('HSET', KEYS[1], mine, n, 'students', others + n)
return others + n
"""


# KEYS: the room's hash; ARGV: its TTL, the socket that must hold the room, then field, value
# pairs. Sets them and the TTL only while the room exists and that socket holds it: 1, else 0.
_SET = """
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""


def web_key(name: str) -> str:
    """A web replica's heartbeat (expiring ``HOST_TTL_S`` after its last): its rooms' students
    count while it is there."""
    return f"{PREFIX}web:{name}"


def room_key(room: str) -> str:
    return f"{PREFIX}room:{room}"


def log_key(room: str) -> str:
    return f"{PREFIX}room:{room}:log"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


def _state(fields: dict[bytes, bytes]) -> dict[str, Any]:
    """The public part of a room's hash, as its log's ``u`` entries carry it."""
    got = {k.decode(): v.decode() for k, v in fields.items()}
    return {
        "exhibit": got.get("exhibit", ""),
        "code": got.get("code", ""),
        "options": got.get("options", "{}"),
        "run_id": got.get("run_id", ""),
        "run_key": got.get("run_key", ""),
        "cursor": int(got.get("cursor", "-1") or -1),
        "teacher": got.get("teacher") == "1",
        "holder": got.get("holder", ""),
        "gen": int(got.get("gen", "0") or 0),
        "students": int(got.get("students", "0") or 0),
    }


@dataclass(eq=False)
class _Local:
    """This replica's part of one room: its :class:`Room` (members here) and its reader."""

    room: Room
    log_last: bytes
    run_key: str = ""
    run_last: bytes | None = None  # None: this replica does not read the run (no student here)
    run_ended: bool = False
    holder: str = ""  # the socket that holds the room (its teacher's), anywhere
    local_holder: str | None = None  # the teacher's socket here, if here
    local_gen: int = 0  # the room's take-over count when the teacher's socket here took it
    reader: asyncio.Task[None] | None = None


class BusRooms:
    """A web replica's rooms on the queue (``Bus.rooms``): the local fan-out (a
    :class:`RoomRegistry` of the rooms with a member here) and the readers."""

    def __init__(self, redis: Redis, exhibits: Any, name: str) -> None:
        self.redis = redis
        self.name = name  # this replica's (``Bus.name``): its students' count in a room
        self.registry = RoomRegistry(exhibits)
        self.locals: dict[str, _Local] = {}
        self._background: set[asyncio.Task[None]] = set()

    async def beat(self) -> None:
        """This replica is alive: its students count (every ``HEARTBEAT_S``, ``Bus._sweep``)."""
        await self.redis.set(web_key(self.name), "1", px=int(HOST_TTL_S * 1000))

    async def count(self, room: str, by: int, most: int = -1) -> int | None:
        """Add ``by`` to this replica's students of ``room`` and tell every replica the room's
        count; None: it ended; -1 (nothing added): ``most`` students are in it already."""
        n = await cast(
            Any,
            self.redis.eval(_COUNT, 1, room_key(room), str(by), self.name, str(most), web_key("")),
        )
        if n is None:
            return None
        if int(n) < 0:
            return -1
        await self.publish(room, n=str(int(n)))
        return int(n)

    def in_background(self, step: Coroutine[Any, Any, None]) -> None:
        """Run ``step`` as a task of its own, kept until it ends (not cancelled with the
        socket's task that started it)."""
        task = asyncio.get_running_loop().create_task(step)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # --- the shared state ---------------------------------------------------------------------

    async def publish(self, room: str, **entry: str) -> None:
        """Add an entry to ``room``'s log, and keep the log as long as the room."""
        ttl = await self.redis.ttl(room_key(room))
        pipe = self.redis.pipeline(transaction=False)
        fields: dict[Any, Any] = dict(entry)
        pipe.xadd(log_key(room), fields, maxlen=LOG_MAXLEN, approximate=True)
        pipe.expire(log_key(room), max(int(ttl), 60))
        await pipe.execute()

    async def publish_state(self, room: str) -> None:
        fields = cast(dict[bytes, bytes], await self.redis.hgetall(room_key(room)))
        if fields:
            await self.publish(room, u=json.dumps(_state(fields)))

    async def end(self, room: str, message: str) -> None:
        """End ``room`` for every replica."""
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(room_key(room))
        pipe.zrem(ROOMS, room)
        pipe.xadd(log_key(room), {"x": message}, maxlen=LOG_MAXLEN, approximate=True)
        pipe.expire(log_key(room), 60)
        await pipe.execute()

    async def live_rooms(self) -> list[tuple[str, dict[str, str]]]:
        """Every room that still exists, with its owner, teacher flag and when its teacher left
        (rooms whose hash expired are dropped from the index here)."""
        ids = [_text(r) for r in await self.redis.zrange(ROOMS, 0, -1)]
        if not ids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        for room in ids:
            pipe.hmget(room_key(room), "owner", "teacher", "left_at")
        rows = await pipe.execute()
        live: list[tuple[str, dict[str, str]]] = []
        gone = []
        for room, (owner, teacher, left_at) in zip(ids, rows, strict=True):
            if teacher is None:
                gone.append(room)
            else:
                live.append(
                    (
                        room,
                        {"owner": _text(owner), "teacher": _text(teacher), "left": _text(left_at)},
                    )
                )
        if gone:
            await self.redis.zrem(ROOMS, *gone)
        return live

    async def free_a_room(self, rooms: list[tuple[str, dict[str, str]]]) -> bool:
        """End the room of ``rooms`` whose teacher's page left first; False when none has."""
        gone = [(float(info["left"] or 0), room) for room, info in rooms if info["teacher"] == "0"]
        if not gone:
            return False
        await self.end(min(gone)[1], EVICTED)
        return True

    # --- this replica's part --------------------------------------------------------------------

    def local(self, room_id: str, fields: dict[bytes, bytes], log_last: bytes) -> _Local:
        """This replica's part of ``room_id`` (made, with its reader, on its first member)."""
        here = self.locals.get(room_id)
        if here is not None:
            return here
        room = Room(id=room_id, token="", teacher=None, headcount=0, teacher_here=False)
        here = _Local(room=room, log_last=log_last)
        self._apply(here, _state(fields), announce=False)
        self.registry.rooms[room_id] = room
        self.locals[room_id] = here
        here.reader = asyncio.create_task(self._read(here))
        return here

    def forget_if_empty(self, here: _Local) -> None:
        room = here.room
        if room.teacher is None and not room.students:
            self._forget(here)

    def _forget(self, here: _Local) -> None:
        room = here.room
        if self.locals.get(room.id) is here:
            del self.locals[room.id]
        if self.registry.rooms.get(room.id) is room:
            room.teacher = None
            self.registry.close(room, "")  # nobody left here to tell: stops its timers
        if here.reader is not None and here.reader is not asyncio.current_task():
            here.reader.cancel()

    def close_here(self, here: _Local, message: str) -> None:
        """The room ended (or this replica lost it): tell its members here, stop reading."""
        self.registry.close(here.room, message)
        self._forget(here)

    def _apply(self, here: _Local, state: dict[str, Any], *, announce: bool = True) -> None:
        """Take the room's new ``state``: a new teacher run starts being relayed, a socket here
        that no longer holds the room is told, the students here see the change."""
        room, registry = here.room, self.registry
        try:
            options = RunOptions.model_validate_json(state["options"] or "{}")
        except ValidationError:
            options = RunOptions()
        run_id = state["run_id"] or None
        new_run = run_id != room.run_id or state["run_key"] != here.run_key
        if new_run and announce:
            registry.relay_now(room)  # the previous run's last events, before the new run
        room.exhibit, room.code, room.options = state["exhibit"], state["code"], options
        room.cursor = state["cursor"]
        room.headcount, room.teacher_here = state["students"], state["teacher"]
        here.holder = state["holder"]
        if new_run:
            room.run_id, here.run_key, here.run_ended = run_id, state["run_key"], False
            room.replay, room.replay_bytes, room.replayable = [], 0, True
            here.run_last = b"0" if room.students and here.run_key else None
            for member in room.students:
                member.synced = run_id
        # A later take-over (its count: an older entry read late names an older holder).
        if here.local_holder is not None and state["gen"] > here.local_gen:
            teacher, room.teacher, here.local_holder = room.teacher, None, None
            if teacher is not None:
                teacher.push(RoomClosed(room=room.id, message=TAKEN_OVER).model_dump_json())
        if announce:
            registry.broadcast(room, room.update().model_dump_json())

    def catch_up(self, here: _Local, member: Member) -> list[str] | None:
        """A student is about to join here: the texts of the current run it is sent after the
        room's state (the replica's replay; none for the replica's first student, whose reader
        reads the run from its start), or None when the run cannot be had whole."""
        room = here.room
        if room.run_id is None or not here.run_key:
            return []
        if here.run_last is None:  # nobody here read it: read it from its start
            here.run_last = b"0"
            room.replay, room.replay_bytes, room.replayable = [], 0, True
            member.synced = room.run_id
            return []
        if not room.replayable:
            return None
        self.registry.relay_now(room)  # what it held is in the replay: not sent twice
        member.synced = room.run_id
        return list(room.replay)

    async def _read(self, here: _Local) -> None:
        """Follow the room's log, and its run while students are here, until it ends."""
        room, redis = here.room, self.redis
        down_since: float | None = None
        while self.locals.get(room.id) is here:
            streams: dict[Any, Any] = {}
            run_stream = events_key(here.run_key) if here.run_key else ""
            reading = here.run_last is not None and bool(run_stream)
            if reading:
                streams[run_stream] = here.run_last
            streams[log_key(room.id)] = here.log_last
            try:
                read = await redis.xread(streams, count=500, block=BLOCK_MS)
                if not read and not await redis.exists(room_key(room.id)):
                    self.close_here(here, ENDED_IDLE if room.has_teacher() else ENDED_GRACE)
                    return
                down_since = None
            except (RedisError, OSError):
                now = time.monotonic()
                down_since = now if down_since is None else down_since
                if now - down_since > DOWN_S:
                    self.close_here(here, UNREACHABLE)
                    return
                await asyncio.sleep(0.5)
                continue
            for stream, entries in cast(list[tuple[bytes, list[Any]]], read or []):
                if _text(stream) == run_stream:
                    if here.run_key and events_key(here.run_key) == run_stream:
                        self._relay(here, entries)
                    continue
                for entry_id, fields in entries:
                    here.log_last = entry_id
                    if not self._logged(here, fields):
                        return

    def _logged(self, here: _Local, fields: dict[bytes, bytes]) -> bool:
        """Take one log entry; False once the room ended."""
        room = here.room
        try:
            if b"x" in fields:
                self.close_here(here, fields[b"x"].decode())
                return False
            if b"n" in fields:
                room.headcount = int(fields[b"n"])
                self.registry.tell_teacher(room)
            elif b"u" in fields:
                self._apply(here, json.loads(fields[b"u"]))
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            log.error("room %s: its log holds a malformed entry: skipped", room.id)
        return True

    def _relay(self, here: _Local, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> None:
        """Relay the teacher's run's new events to the students here (validated once here)."""
        room, registry = here.room, self.registry
        for entry_id, fields in entries:
            here.run_last = entry_id
            raw = fields.get(b"e", b"")
            try:
                event = EVENT_ADAPTER.validate_json(raw)
            except ValidationError:
                continue  # the queue's placeholder entry, or a line that is no event
            if event.run_id != room.run_id or here.run_ended:
                continue
            terminal = is_terminal(event)
            here.run_ended = terminal
            text = raw.decode()
            if room.replayable:
                if room.replay_bytes + len(text) <= registry.replay_bytes:
                    room.replay.append(text)
                    room.replay_bytes += len(text)
                else:
                    room.replay, room.replay_bytes, room.replayable = [], 0, False
            urgent = terminal or event.detail_of is not None or isinstance(event, DetailFailed)
            registry.relay(room, text, now=urgent)

    async def close(self) -> None:
        if self._background:
            await asyncio.wait(set(self._background), timeout=2.0)
        for here in list(self.locals.values()):
            reader = here.reader
            self.close_here(here, STOPPING)
            await stop_task(reader)


class BusRoomSession:
    """One socket's part in the rooms on the queue: at most one room, as teacher or student."""

    def __init__(self, rooms: BusRooms, member: Member, owner: str | None) -> None:
        self.rooms = rooms
        self.member = member
        self.owner = owner or ""
        self.allowance = JoinLeaveAllowance()
        self.here: _Local | None = None
        self.teaching = False
        self.token = ""
        self.holder = secrets.token_urlsafe(12)

    def current(self) -> _Local | None:
        """This socket's room here, or None once it ended, this socket was dropped from it (fell
        behind) or another page of the teacher took it over. ``self.here`` stays until
        :meth:`leave` (which takes a dropped student out of the count)."""
        here = self.here
        if here is not None and (
            self.rooms.locals.get(here.room.id) is not here
            or (
                here.room.teacher is not self.member
                if self.teaching
                else self.member not in here.room.students
            )
        ):
            return None
        return here

    def _refuse(self, request: RoomRequest, message: str) -> None:
        room = clean_text(getattr(request, "room", None) or "", 64)
        self.member.push(
            RoomRefused(room=room, request=request.type, message=message).model_dump_json()
        )

    async def request(self, request: RoomRequest) -> None:
        if isinstance(request, (JoinRoomRequest, LeaveRoomRequest)) and not (
            (isinstance(request, LeaveRoomRequest) and request.token is not None)
            or self.allowance.take()
        ):
            self._refuse(
                request,
                "this page joined and left rooms too often: wait a few seconds and try again",
            )
            return
        try:
            if isinstance(request, OpenRoomRequest):
                await self._open(request)
            elif isinstance(request, JoinRoomRequest):
                await self._join(request)
            elif isinstance(request, LeaveRoomRequest):
                await self._leave(request)
            else:
                await self._drive(request)
        except (RedisError, OSError) as exc:
            self._refuse(request, f"the run queue (Redis) is unreachable ({exc}): try again")

    async def _open(self, request: OpenRoomRequest) -> None:
        rooms, registry, redis = self.rooms, self.rooms.registry, self.rooms.redis
        if request.room is not None or request.token is not None:
            room_id = request.room or ""
            fields = cast(dict[bytes, bytes], await redis.hgetall(room_key(room_id)))
            token = _text(fields.get(b"token_hash"))
            if (
                not fields
                or request.token is None
                or not hmac.compare_digest(_hash(request.token), token)
            ):
                self._refuse(
                    request,
                    "this room has ended, or the token is not its teacher's: start a new room",
                )
                return
            await self.leave()
            pipe = redis.pipeline(transaction=True)
            pipe.hset(room_key(room_id), mapping={"teacher": "1", "holder": self.holder})
            pipe.hincrby(room_key(room_id), "gen", 1)
            pipe.hdel(room_key(room_id), "left_at")
            pipe.expire(room_key(room_id), int(registry.idle_s))
            await pipe.execute()
            token = request.token
        else:
            live = await rooms.live_rooms()
            if len(live) >= registry.max_rooms and not await rooms.free_a_room(live):
                self._refuse(
                    request,
                    f"this server already holds {registry.max_rooms} rooms, the most it "
                    "allows: try again once one has ended",
                )
                return
            here = self.current()
            mine = here.room.id if here is not None and self.teaching else None
            held = [(r, info) for r, info in live if info["owner"] == self.owner and r != mine]
            if len(held) >= registry.max_rooms_per_client and not await rooms.free_a_room(held):
                self._refuse(
                    request,
                    f"this client already holds {registry.max_rooms_per_client} rooms, the most "
                    "one client may: close one (or wait until a room whose teacher left ends)",
                )
                return
            if here is not None and self.teaching:  # it chose another room: no grace
                self.here, self.teaching = None, False
                here.room.teacher, here.local_holder = None, None
                await rooms.end(here.room.id, "the teacher opened another room: this one has ended")
            await self.leave()
            room_id, token = secrets.token_urlsafe(12), secrets.token_urlsafe(24)
            state: dict[Any, Any] = {
                "token_hash": _hash(token),
                "owner": self.owner,
                "teacher": "1",
                "holder": self.holder,
                "gen": "1",
                "students": "0",
                "exhibit": "",
                "code": "",
                "options": "{}",
                "run_id": "",
                "run_key": "",
                "cursor": "-1",
            }
            pipe = redis.pipeline(transaction=True)
            pipe.hset(room_key(room_id), mapping=state)
            pipe.expire(room_key(room_id), int(registry.idle_s))
            pipe.zadd(ROOMS, {room_id: time.time()})
            await pipe.execute()
        fields, last = await self._snapshot(room_id)
        here = rooms.local(room_id, fields, last)
        previous = here.room.teacher
        if previous is not None and previous is not self.member:  # a page of it here
            previous.push(RoomClosed(room=room_id, message=TAKEN_OVER).model_dump_json())
        here.room.teacher, here.local_holder, here.holder = self.member, self.holder, self.holder
        here.local_gen = int(fields.get(b"gen", b"0"))
        here.room.teacher_here = True
        self.here, self.teaching, self.token = here, True, token
        self.member.push(
            RoomOpened(
                room=room_id,
                token=token,
                max_students=registry.max_students,
                grace_s=registry.grace_s,
            ).model_dump_json()
        )
        registry.tell_teacher(here.room, now=True)
        await rooms.publish_state(room_id)

    async def _snapshot(self, room_id: str) -> tuple[dict[bytes, bytes], bytes]:
        """The room's hash and its log's last entry id, read together."""
        pipe = self.rooms.redis.pipeline(transaction=True)
        pipe.hgetall(room_key(room_id))
        pipe.xrevrange(log_key(room_id), count=1)
        fields, last = await pipe.execute()
        return fields, (last[0][0] if last else b"0")

    async def _join(self, request: JoinRoomRequest) -> None:
        rooms, registry, redis = self.rooms, self.rooms.registry, self.rooms.redis
        if not re.fullmatch(ROOM_ID_PATTERN, request.room):
            # Never a key to look up: ``x:log`` named another room's log (Redis: WRONGTYPE).
            self._refuse(request, NOT_A_ROOM_ID)
            return
        here = self.current()
        if here is not None and here.room.id == request.room:
            return
        fields, last = await self._snapshot(request.room)
        if b"token_hash" not in fields:
            self._refuse(
                request,
                "no such room: it has ended (its teacher closed it or left) or the link is "
                "mistyped; ask the teacher for the room's link",
            )
            return
        count = await rooms.count(request.room, 1, registry.max_students)
        if count is None:
            self._refuse(request, "no such room: it has just ended")
            return
        if count < 0:
            self._refuse(
                request, f"this room is full: it has {registry.max_students} students already"
            )
            return
        await self.leave()
        fields[b"students"] = str(count).encode()
        here = rooms.local(request.room, fields, last)
        room = here.room
        # A run's stream lives KEEP_S after its end: an older run cannot be replayed.
        texts = rooms.catch_up(here, self.member)
        if texts is not None and here.run_key and not await redis.exists(events_key(here.run_key)):
            texts = None
        if texts is None:
            self.member.synced = None
        room.students.add(self.member)
        self.here, self.teaching = here, False
        room.headcount = count
        whole = texts is not None
        self.member.push(room.update(replayed=whole or room.run_id is None).model_dump_json())
        for text in texts or []:
            self.member.push(text)

    async def _leave(self, request: LeaveRoomRequest) -> None:
        here = self.current()
        if here is None or here.room.id != request.room:
            self._refuse(request, "this page is in no such room")
            return
        if request.token is not None:
            if not self.teaching or not hmac.compare_digest(request.token, self.token):
                self._refuse(request, "only the room's teacher can close it")
                return
            self.here, self.teaching = None, False
            await self.rooms.end(here.room.id, CLOSED)
            here.room.teacher, here.local_holder = None, None
            self.rooms.forget_if_empty(here)
            return
        await self.leave()

    async def _drive(self, request: DriveRoomRequest) -> None:
        here = self.current()
        if (
            here is None
            or not self.teaching
            or here.room.id != request.room
            or not hmac.compare_digest(request.token, self.token)
        ):
            self._refuse(request, "only the room's teacher drives it (with its token)")
            return
        if request.exhibit not in self.rooms.registry.exhibits:
            self._refuse(request, f"unknown exhibit {clean_text(request.exhibit, 64)!r}")
            return
        await self._set(
            here,
            exhibit=request.exhibit,
            code=request.code,
            options=request.options.model_dump_json(),
            cursor=str(request.cursor),
        )

    async def _set(self, here: _Local, **fields: str) -> None:
        """Change the room's state (renewing its idle time) and tell every replica."""
        if await self._held(here.room.id, self.rooms.registry.idle_s, dict(fields)):
            await self.rooms.publish_state(here.room.id)

    async def _held(self, room: str, ttl: float, fields: dict[str, str]) -> bool:
        """Set ``fields`` of ``room`` and its TTL if this socket holds it (it still exists)."""
        pairs = [item for pair in fields.items() for item in pair]
        args = [str(int(ttl)), self.holder, *pairs]
        return bool(await cast(Any, self.rooms.redis.eval(_SET, 1, room_key(room), *args)))

    async def ran(self, request: RunRequest, key: str) -> None:
        """The socket's run ``request`` went on the queue as ``key``: a teacher's is announced
        (before any replica relays it) and every replica's students follow it."""
        here = self.current()
        if here is None or not self.teaching or request.exhibit not in self.rooms.registry.exhibits:
            return
        with contextlib.suppress(RedisError, OSError):  # the run goes on; the room misses it
            await self._set(
                here,
                exhibit=request.exhibit,
                code=request.code,
                options=request.options.model_dump_json(),
                run_id=request.run_id,
                run_key=key,
                cursor="-1",
            )

    async def leave(self) -> None:
        """This socket leaves its room: a student is gone (the count goes down, also for one
        dropped for falling behind); a teacher's room waits ``grace_s`` (its hash's TTL) for
        the teacher to come back, then ends."""
        here, teaching = self.here, self.teaching  # not current(): a dropped student counted
        self.here, self.teaching = None, False
        self.member.synced = None
        if here is None:
            return
        room, rooms = here.room, self.rooms
        try:
            if not teaching:
                room.students.discard(self.member)
                rooms.forget_if_empty(here)
                await rooms.count(room.id, -1)  # nothing once the room ended
                return
            if room.teacher is self.member:
                room.teacher, here.local_holder = None, None
                rooms.forget_if_empty(here)
            left = {"teacher": "0", "left_at": str(time.time())}
            if await self._held(room.id, rooms.registry.grace_s, left):  # else: another page's
                await rooms.publish_state(room.id)
        except (RedisError, OSError):
            log.warning("room %s: could not say that a page left (the queue is away)", room.id)


__all__ = ["BusRoomSession", "BusRooms", "log_key", "room_key"]
