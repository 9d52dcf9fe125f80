"""Classroom items of issue 32's break-it review (design 0065), on the rooms themselves (no
worker): a teacher's run of an exhibit id the server does not have (``constructor``,
``__proto__``, ``toString``) is never announced to the students; a student's joins and leaves are
rate-limited and never echo the teacher's code to the teacher; a client whose teacher pages have
all closed can open a room at once (the oldest teacherless room makes way) instead of being locked
out for the grace period."""

from __future__ import annotations

import asyncio
import json

from jaxscope.protocol import (
    EVENT_ADAPTER,
    DriveRoomRequest,
    EventModel,
    JoinRoomRequest,
    LeaveRoomRequest,
    OpenRoomRequest,
    RoomClosed,
    RoomOpened,
    RoomRefused,
    RoomUpdated,
    RunFinished,
    RunRequest,
    StageStarted,
)
from jaxscope.server import rooms as rooms_module
from jaxscope.server.rooms import Member, RoomRegistry, RoomSession

from exhibits.registry import EXHIBITS
from testkit import run_async

BIG = 64 * 1024 * 1024


class Page:
    """A socket's part in the rooms, with what it was sent."""

    def __init__(self, registry: RoomRegistry, owner: str = "loopback") -> None:
        self.session = RoomSession(registry, Member(BIG), owner)
        self.texts: list[str] = []
        self._pump = asyncio.ensure_future(self.session.member.pump(self._send))

    async def _send(self, text: str) -> None:
        self.texts.append(text)

    async def received(self) -> list[EventModel]:
        await asyncio.sleep(0)  # the pump sends what is queued
        events = [EVENT_ADAPTER.validate_json(t) for t in self.texts]
        self.texts.clear()
        return events

    async def open(self) -> RoomOpened:
        await self.session.request(OpenRoomRequest())
        opened = next(e for e in await self.received() if isinstance(e, RoomOpened))
        return opened

    def close(self) -> None:
        self.session.leave()
        self._pump.cancel()


def test_a_run_of_an_unknown_exhibit_id_is_never_announced() -> None:
    async def main() -> None:
        registry = RoomRegistry(EXHIBITS)
        teacher, student = Page(registry), Page(registry, "student")
        opened = await teacher.open()
        await student.session.request(JoinRoomRequest(room=opened.room))
        await student.received()
        for bad in ("constructor", "__proto__", "toString"):
            await teacher.session.ran(RunRequest(run_id=f"r-{bad}", exhibit=bad, code="x"))
            await teacher.session.request(
                DriveRoomRequest(room=opened.room, token=opened.token, exhibit=bad, code="x")
            )
        assert await student.received() == []
        refusals = [e for e in await teacher.received() if isinstance(e, RoomRefused)]
        assert len(refusals) == 3 and all("unknown exhibit" in r.message for r in refusals)
        assert registry.rooms[opened.room].exhibit == ""
        # A real exhibit still goes through.
        await teacher.session.ran(RunRequest(run_id="ok", exhibit="tracing", code="x"))
        (update,) = await student.received()
        assert isinstance(update, RoomUpdated) and update.exhibit == "tracing"
        teacher.close()
        student.close()

    run_async(main())


def test_join_and_leave_floods_are_limited_and_never_echo_the_teachers_code() -> None:
    async def main() -> None:
        registry = RoomRegistry(EXHIBITS)
        teacher, student = Page(registry), Page(registry, "student")
        opened = await teacher.open()
        code = "x = 1\n" * 20_000  # 120 kB of the teacher's code
        await teacher.session.request(
            DriveRoomRequest(room=opened.room, token=opened.token, exhibit="tracing", code=code)
        )
        await teacher.received()
        for _ in range(300):  # 600 frames from one student
            await student.session.request(JoinRoomRequest(room=opened.room))
            await student.session.request(LeaveRoomRequest(room=opened.room))
        await asyncio.sleep(rooms_module.TELL_TEACHER_S + 0.2)
        to_teacher = teacher.texts[:]
        told = await teacher.received()
        # The teacher hears the count at most once per TELL_TEACHER_S, never its code back.
        assert 1 <= len(told) <= 3, len(told)
        assert all(isinstance(e, RoomUpdated) and e.code == "" for e in told)
        assert sum(len(t) for t in to_teacher) < 5_000
        # The student was let through JOIN_LEAVE_BURST times, then refused with a short answer.
        to_student = student.texts[:]
        answers = await student.received()
        refused = [e for e in answers if isinstance(e, RoomRefused)]
        assert len(refused) >= 600 - 2 * rooms_module.JOIN_LEAVE_BURST
        assert "too often" in refused[0].message
        # Joins that got in carried the code to the student (its page shows it), few of them.
        assert sum(len(t) for t in to_student) < 12 * len(code)
        teacher.close()
        student.close()

    run_async(main())


def test_closed_teacher_pages_do_not_lock_a_client_out_of_rooms() -> None:
    async def main() -> None:
        registry = RoomRegistry(EXHIBITS)
        registry.max_rooms_per_client = 8
        pages = [Page(registry) for _ in range(8)]
        rooms = [await page.open() for page in pages]
        student = Page(registry, "student")
        await student.session.request(JoinRoomRequest(room=rooms[0].room))
        for page in pages:  # 8 teacher pages closed: each room waits out its grace
            page.close()
        await student.received()
        assert len(registry.rooms) == 8
        # The same client opens a room at once: the oldest teacherless room makes way.
        ninth = Page(registry)
        opened = await ninth.open()
        assert opened.room in registry.rooms and rooms[0].room not in registry.rooms
        closed = [e for e in await student.received() if isinstance(e, RoomClosed)]
        assert closed and "opened in its place" in closed[0].message
        # A room whose teacher is here is never ended for another: at the cap, refused.
        for room in list(registry.rooms.values()):
            if room.teacher is None:
                registry.close(room, "test")
        registry.max_rooms_per_client = len(registry.rooms)
        tenth = Page(registry)
        await tenth.session.request(OpenRoomRequest())
        (refused,) = [e for e in await tenth.received() if isinstance(e, RoomRefused)]
        assert "already holds" in refused.message
        for page in (ninth, tenth, student):
            page.close()

    run_async(main())


def test_a_full_server_frees_the_oldest_teacherless_room() -> None:
    async def main() -> None:
        registry = RoomRegistry(EXHIBITS)
        registry.max_rooms = 2
        gone = Page(registry, "a")
        first = await gone.open()
        gone.close()
        here = Page(registry, "b")
        await here.open()
        newcomer = Page(registry, "c")
        opened = await newcomer.open()
        assert opened.room in registry.rooms
        assert first.room not in registry.rooms and len(registry.rooms) == 2
        for page in (here, newcomer):
            page.close()

    run_async(main())


def test_the_relay_builds_each_frame_once_for_every_student() -> None:
    """The teacher's run's events reach the students as frames built once: every student's
    queue holds the very same frame string, and a frame holds many events."""

    async def main() -> None:
        registry = RoomRegistry(EXHIBITS)
        teacher = Page(registry)
        opened = await teacher.open()
        students = [Page(registry, f"s{i}") for i in range(3)]
        for page in students:
            await page.session.request(JoinRoomRequest(room=opened.room))
        await teacher.session.ran(RunRequest(run_id="r", exhibit="tracing", code="x"))
        for page in students:
            await page.received()
        frames: list[list[str]] = [[] for _ in students]
        for page, got in zip(students, frames, strict=True):
            page._pump.cancel()
            page.session.member.drop_all()

            async def send_frame(text: str, got: list[str] = got) -> None:
                got.append(text)

            page._pump = asyncio.ensure_future(page.session.member.pump(page._send, send_frame))
        for seq in range(50):
            event = StageStarted(run_id="r", seq=seq, stage="trace")
            teacher.session.sent(event, event.model_dump_json())
        end = RunFinished(run_id="r", seq=50, duration_ms=1.0)
        teacher.session.sent(end, end.model_dump_json())
        await asyncio.sleep(0.05)
        assert all(got == frames[0] for got in frames) and 1 <= len(frames[0]) <= 2
        assert all(a is b for a, b in zip(frames[0], frames[1], strict=True))  # one string
        events = [e for frame in frames[0] for e in json.loads(frame)]
        assert [e["seq"] for e in events] == list(range(51))
        for page in (teacher, *students):
            page.close()

    run_async(main())
