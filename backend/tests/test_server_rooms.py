"""Classroom mode over the real websocket (design 0044): a teacher opens a room, students join
it, the teacher's run is relayed to them (the very events the teacher got: the jaxpr is
``jax.make_jaxpr``'s), a late student gets the run so far, only the teacher's socket with its
token drives, bad or ended room ids get a clear refusal, and the bounds hold. The server is the
real app (TestClient, real worker pool)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any, TypeVar

import jax
import pytest
from fastapi.testclient import TestClient
from jaxscope.protocol import (
    JaxprStaged,
    RoomClosed,
    RoomOpened,
    RoomRefused,
    RoomUpdated,
    RunFailed,
)
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.request_loop import NO_ROOMS, serve_requests
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.server.app import create_app
from jaxscope.server.rooms import Member, Room, RoomRegistry
from jaxscope.settings import Limits, Settings

from exhibits.registry import EXHIBITS
from testkit import run_async
from tests.harness import collect, next_event, run_msg

SIN = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2.0\nargs = (jnp.ones(3),)\n"
WS = "ws://localhost:8000/api/ws"
SETTINGS = Settings(workers=1, limits=Limits(wall_s=20.0), check_exhibits=False)
OPEN = json.dumps({"type": "open_room"})

E = TypeVar("E")

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(SETTINGS), base_url="http://localhost:8000") as c:
        yield c


def receive(ws: Any) -> Any:
    return next_event(ws)


def expect(ws: Any, cls: type[E]) -> E:
    event = receive(ws)
    assert isinstance(event, cls), event
    return event


def open_room(ws: Any) -> RoomOpened:
    ws.send_text(OPEN)
    opened = expect(ws, RoomOpened)
    assert expect(ws, RoomUpdated).students == 0
    return opened


def join(ws: Any, room: str) -> RoomUpdated:
    ws.send_text(json.dumps({"type": "join_room", "room": room}))
    return expect(ws, RoomUpdated)


def drive(room: str, token: str, **kw: Any) -> str:
    return json.dumps(
        {"type": "drive_room", "room": room, "token": token, "exhibit": "tracing", "code": "x"} | kw
    )


def sin_jaxpr() -> str:
    snippet = load_snippet(SIN)
    return str(jax.make_jaxpr(snippet.f)(*snippet.args))


def test_teacher_run_reaches_the_students(client: TestClient) -> None:
    with client.websocket_connect(WS) as teacher, client.websocket_connect(WS) as student:
        opened = open_room(teacher)
        assert len(opened.room) >= 16 and len(opened.token) >= 32 and opened.room != opened.token
        first = join(student, opened.room)
        assert (first.room, first.teacher_run, first.teacher, first.students) == (
            opened.room,
            None,
            True,
            1,
        )
        assert expect(teacher, RoomUpdated).students == 1
        teacher.send_text(run_msg("r1", SIN))
        taught = collect(teacher, "r1")
        announced = expect(student, RoomUpdated)
        assert (announced.teacher_run, announced.exhibit, announced.code) == ("r1", "tracing", SIN)
        # The student is sent the teacher's events, the same ones in the same order.
        followed = collect(student, "r1")
        assert [e.model_dump_json() for e in followed] == [e.model_dump_json() for e in taught]
        staged = [e for e in followed if isinstance(e, JaxprStaged)]
        assert staged and staged[0].jaxpr.text == sin_jaxpr()
        assert followed[-1].type == "run_finished"

        # A student that joins after the run gets the run whole, then follows the next one.
        with client.websocket_connect(WS) as late:
            state = join(late, opened.room)
            assert (state.teacher_run, state.replayed, state.students) == ("r1", True, 2)
            replayed = collect(late, "r1")
            assert [e.model_dump_json() for e in replayed] == [e.model_dump_json() for e in taught]
            # The teacher's stepper and edits reach both students.
            assert expect(teacher, RoomUpdated).students == 2
            teacher.send_text(drive(opened.room, opened.token, cursor=3, code=SIN + "# step\n"))
            for ws in (student, late):
                moved = expect(ws, RoomUpdated)
                assert (moved.cursor, moved.code, moved.teacher_run) == (3, SIN + "# step\n", "r1")


def test_only_the_teacher_drives(client: TestClient) -> None:
    with client.websocket_connect(WS) as teacher, client.websocket_connect(WS) as student:
        opened = open_room(teacher)
        join(student, opened.room)
        # A student's socket cannot drive, neither with a guessed nor with the real token
        # (a token leaked to a student does not make its socket the teacher's).
        for token in ("guess", opened.token):
            student.send_text(drive(opened.room, token, cursor=1))
            refused = expect(student, RoomRefused)
            assert refused.request == "drive_room" and "only the room's teacher" in refused.message
        student.send_text(json.dumps({"type": "leave_room", "room": opened.room, "token": "x"}))
        assert "only the room's teacher can close" in expect(student, RoomRefused).message
        # The teacher's socket with a wrong token is refused too.
        assert expect(teacher, RoomUpdated).students == 1
        teacher.send_text(drive(opened.room, opened.token[:-1] + "A"))
        if opened.token.endswith("A"):  # pragma: no cover - a 1/64 chance
            teacher.send_text(drive(opened.room, opened.token[:-1] + "B"))
        assert expect(teacher, RoomRefused).request == "drive_room"
        # A student's run stays its own: it is not relayed to the room.
        student.send_text(run_msg("s1", SIN))
        collect(student, "s1")
        teacher.send_text(drive(opened.room, opened.token, cursor=2))
        assert expect(student, RoomUpdated).cursor == 2
        # An exhibit that does not exist and malformed drives are refused before any student.
        teacher.send_text(drive(opened.room, opened.token, exhibit="nope"))
        assert "unknown exhibit" in expect(teacher, RoomRefused).message
        teacher.send_text(drive(opened.room, opened.token, cursor=-5))
        assert expect(teacher, RunFailed).kind == "invalid_request"
        # The teacher closes the room: the students are told, and the room is gone.
        teacher.send_text(
            json.dumps({"type": "leave_room", "room": opened.room, "token": opened.token})
        )
        assert "the teacher closed the room" in expect(student, RoomClosed).message
        with client.websocket_connect(WS) as late:
            late.send_text(json.dumps({"type": "join_room", "room": opened.room}))
            assert "no such room" in expect(late, RoomRefused).message


def test_bad_room_ids_are_refused_clearly(client: TestClient) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(json.dumps({"type": "join_room", "room": "no-such-room"}))
        refused = expect(ws, RoomRefused)
        assert (refused.room, refused.request) == ("no-such-room", "join_room")
        assert "no such room" in refused.message
        ws.send_text(json.dumps({"type": "join_room", "room": "x" * 65, "run_id": "j"}))
        assert expect(ws, RunFailed).kind == "invalid_request"
        ws.send_text(json.dumps({"type": "open_room", "room": "bad room!", "token": "t"}))
        assert "room" in expect(ws, RunFailed).message
        ws.send_text(json.dumps({"type": "open_room", "room": "abcdefgh12", "token": "t"}))
        assert "this room has ended" in expect(ws, RoomRefused).message
        ws.send_text(json.dumps({"type": "leave_room", "room": "abcdefgh12"}))
        assert "in no such room" in expect(ws, RoomRefused).message
        # The socket's own runs carry on after refusals.
        ws.send_text(run_msg("after", SIN))
        assert collect(ws, "after")[-1].type == "run_finished"


def test_bounds_refuse_clearly(client: TestClient) -> None:
    rooms: RoomRegistry = client.app.state.rooms  # type: ignore[attr-defined]
    rooms.max_rooms, rooms.max_students = 1, 1
    with (
        client.websocket_connect(WS) as teacher,
        client.websocket_connect(WS) as other,
        client.websocket_connect(WS) as s1,
        client.websocket_connect(WS) as s2,
    ):
        opened = open_room(teacher)
        other.send_text(OPEN)
        assert "already holds 1 rooms" in expect(other, RoomRefused).message
        join(s1, opened.room)
        s2.send_text(json.dumps({"type": "join_room", "room": opened.room}))
        assert "this room is full" in expect(s2, RoomRefused).message

    # One client cannot take every room: its rooms are bounded, and a teacher that opens
    # another room closes its previous one at once (not after the grace).
    rooms.close(rooms.rooms[opened.room], "the test ends it")  # it waits for its teacher
    rooms.max_rooms, rooms.max_rooms_per_client = 10, 2
    with client.websocket_connect(WS) as a, client.websocket_connect(WS) as b:
        first = open_room(a)
        with client.websocket_connect(WS) as student:
            join(student, first.room)
            assert expect(a, RoomUpdated).students == 1
            second = open_room(a)
            assert "opened another room" in expect(student, RoomClosed).message
        assert first.room not in rooms.rooms and second.room in rooms.rooms
        open_room(b)
        with client.websocket_connect(WS) as c:
            c.send_text(OPEN)
            assert "this client already holds 2 rooms" in expect(c, RoomRefused).message


def test_teacher_leaving_ends_the_room_after_the_grace(client: TestClient) -> None:
    rooms: RoomRegistry = client.app.state.rooms  # type: ignore[attr-defined]
    rooms.grace_s = 60.0
    with client.websocket_connect(WS) as student:
        with client.websocket_connect(WS) as teacher:
            opened = open_room(teacher)
            join(student, opened.room)
        assert expect(student, RoomUpdated).teacher is False
        # The teacher's page comes back within the grace with its token and drives again.
        with client.websocket_connect(WS) as back:
            back.send_text(
                json.dumps({"type": "open_room", "room": opened.room, "token": opened.token})
            )
            assert expect(back, RoomOpened).room == opened.room
            assert expect(student, RoomUpdated).teacher is True
            back.send_text(drive(opened.room, opened.token, cursor=4))
            assert expect(student, RoomUpdated).cursor == 4
            rooms.grace_s = 0.2
        assert expect(student, RoomUpdated).teacher is False
        start = time.monotonic()
        closed = expect(student, RoomClosed)
        assert "did not come back" in closed.message and time.monotonic() - start < 10
        assert opened.room not in rooms.rooms


def test_a_student_that_falls_behind_is_dropped() -> None:
    """A student's queue is bounded: past ``member_bytes`` it leaves the room (the teacher and
    the other students are not held up)."""

    async def main() -> None:
        registry = RoomRegistry({"tracing"})
        room = Room(id="r" * 16, token="t" * 32, teacher=Member(10_000), run_id="run")
        slow, fast = Member(1000), Member(10_000)
        slow.synced = fast.synced = "run"
        room.students |= {slow, fast}
        registry.rooms[room.id] = room
        for _ in range(3):
            registry.broadcast(room, "e" * 400, run=True)
        assert room.students == {fast}
        sent: list[str] = []

        async def send(text: str) -> None:
            sent.append(text)

        pump = asyncio.create_task(slow.pump(send))
        await asyncio.sleep(0.05)
        pump.cancel()
        assert len(sent) == 1 and "fell too far behind" in sent[0]
        assert RoomClosed.model_validate_json(sent[0]).room == room.id

    run_async(main())


def test_without_rooms_a_room_request_is_refused() -> None:
    """A transport without rooms (the hosted pool's Unix socket) answers room requests with
    ``room_refused``, and the session carries on."""

    async def main() -> list[str]:
        script = [
            json.dumps({"type": "join_room", "room": "abcdefgh12"}),
            json.dumps({"type": "open_room"}),
        ]
        sent: list[str] = []

        async def receive() -> str | None:
            return script.pop(0) if script else None

        async def send(text: str) -> None:
            sent.append(text)

        pool = WorkerPool(SETTINGS.limits, size=0, max_workers=1)
        await serve_requests(receive, send, Session(pool, EXHIBITS))
        return sent

    answers = [RoomRefused.model_validate_json(t) for t in run_async(main())]
    assert [(a.request, a.room, a.message) for a in answers] == [
        ("join_room", "abcdefgh12", NO_ROOMS),
        ("open_room", "", NO_ROOMS),
    ]
