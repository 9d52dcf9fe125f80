"""Classroom mode on the run queue (design 0072): a real ``redis-server``, one pool host as a
process, and web tiers (the real app, ``Settings.queue``) in this process, as ``test_bus.py``
runs them. A teacher on one replica, students on it and on another: every student gets the
teacher's run (the events the teacher got, as it got them) and its end; a student that joins
late on a third replica (which never read the run) gets it from the run's start; the teacher
hears the count without its code; an exhibit the server lacks is refused; the teacher's close
reaches every replica's students. Skips without ``redis-server``, as ``test_bus.py`` does."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jaxscope.bus.jobs import PASSWORD_ENV
from jaxscope.bus.rooms import room_key
from jaxscope.protocol import EventModel, RoomClosed, RoomOpened, RoomRefused, RoomUpdated

from tests.harness import next_event, run_msg
from tests.test_bus import PASSWORD, REDIS, SIN, WS, RedisServer, start_host, stop, web

pytestmark = [
    pytest.mark.skipif(
        REDIS is None, reason="redis-server is not installed here (`make test` installs it)"
    ),
    pytest.mark.timeout(180),
]


@pytest.fixture(scope="module")
def queue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A Redis with one light-lane pool host."""
    redis = RedisServer(tmp_path_factory.mktemp("redis"))
    redis.start()
    previous = os.environ.get(PASSWORD_ENV)
    os.environ[PASSWORD_ENV] = PASSWORD
    host = start_host(redis, "light=1", tmp_path_factory.mktemp("host") / "host.log")
    try:
        yield redis
    finally:
        stop(host)
        redis.kill()
        if previous is None:
            os.environ.pop(PASSWORD_ENV, None)
        else:
            os.environ[PASSWORD_ENV] = previous


def until(ws: Any, kind: type[EventModel]) -> Any:
    while not isinstance(event := next_event(ws), kind):
        pass
    return event


def run_events(ws: Any, run_id: str) -> list[str]:
    """The events of ``run_id`` a socket gets, up to its end, as JSON texts (what the page
    reads), without the queue's own ``run_accepted``."""
    texts: list[str] = []
    while True:
        event = next_event(ws)
        if event.run_id != run_id or event.type in ("run_accepted", "run_queued"):
            continue
        texts.append(event.model_dump_json())
        if event.type in ("run_finished", "run_failed"):
            return texts


def join(ws: Any, room: str) -> RoomUpdated:
    ws.send_text(json.dumps({"type": "join_room", "room": room}))
    return until(ws, RoomUpdated)  # type: ignore[no-any-return]


def test_a_teachers_run_reaches_students_on_every_replica(queue: RedisServer) -> None:
    with (
        web(queue) as one,
        web(queue) as two,
        web(queue) as three,
        one.websocket_connect(WS) as teacher,
        one.websocket_connect(WS) as near,
        two.websocket_connect(WS) as far,
    ):
        teacher.send_text(json.dumps({"type": "open_room"}))
        opened = until(teacher, RoomOpened)
        room = opened.room
        assert join(near, room).students >= 1
        assert join(far, room).students == 2
        # The teacher hears the count, without its own code echoed back.
        while (count := until(teacher, RoomUpdated)).students < 2:
            pass
        assert count.code == "" and count.teacher

        # An exhibit the server lacks is refused, never announced.
        drive = {"type": "drive_room", "room": room, "token": opened.token, "code": "x = 1"}
        teacher.send_text(json.dumps(drive | {"exhibit": "constructor", "cursor": -1}))
        refused = until(teacher, RoomRefused)
        assert "unknown exhibit" in refused.message

        teacher.send_text(run_msg("t1", SIN))
        mine = run_events(teacher, "t1")
        assert json.loads(mine[-1])["type"] == "run_finished"
        for student in (near, far):
            announced = until(student, RoomUpdated)
            while announced.teacher_run != "t1":
                announced = until(student, RoomUpdated)
            assert announced.code == SIN and announced.exhibit == "tracing"
            assert run_events(student, "t1") == mine

        # A late student on a replica that never read the run gets it from its start.
        with three.websocket_connect(WS) as late:
            update = join(late, room)
            assert update.teacher_run == "t1" and update.replayed
            assert run_events(late, "t1") == mine
        # It left: the room's count (in Redis, for every replica) is two again.
        deadline = time.monotonic() + 20
        while queue.client().hget(room_key(room), "students") != b"2":
            assert time.monotonic() < deadline, queue.client().hgetall(room_key(room))
            time.sleep(0.05)

        # The teacher closes the room: every replica's students are told.
        teacher.send_text(json.dumps({"type": "leave_room", "room": room, "token": opened.token}))
        for student in (near, far):
            assert until(student, RoomClosed).message == "the teacher closed the room"
        near.send_text(json.dumps({"type": "join_room", "room": room}))
        assert "no such room" in until(near, RoomRefused).message


def test_room_requests_with_the_queue_away_are_refused_clearly(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient
    from jaxscope.local_server import free_port
    from jaxscope.server.app import create_app
    from jaxscope.settings import Settings

    app = create_app(Settings(queue=f"redis://127.0.0.1:{free_port()}/0", check_exhibits=False))
    with TestClient(app, base_url="http://127.0.0.1:8000") as c, c.websocket_connect(WS) as ws:
        ws.send_text(json.dumps({"type": "open_room"}))
        refused = until(ws, RoomRefused)
        # Joins are rate-limited per socket on the queue too (10 at once), before Redis.
        answers = []
        for _ in range(11):
            ws.send_text(json.dumps({"type": "join_room", "room": "Room_id-1234"}))
            answers.append(until(ws, RoomRefused).message)
    assert "unreachable" in refused.message
    assert all("unreachable" in a for a in answers[:10]), answers
    assert "too often" in answers[10]


def test_a_teacher_that_left_takes_the_room_back_on_another_replica(queue: RedisServer) -> None:
    with web(queue) as one, web(queue) as two, two.websocket_connect(WS) as student:
        with one.websocket_connect(WS) as teacher:
            teacher.send_text(json.dumps({"type": "open_room"}))
            opened = until(teacher, RoomOpened)
            join(student, opened.room)
        # The teacher's page went: the students are told, the room waits for it.
        while until(student, RoomUpdated).teacher:
            pass
        with two.websocket_connect(WS) as again:
            back = {"type": "open_room", "room": opened.room, "token": opened.token}
            again.send_text(json.dumps(back | {"token": "not-the-token"}))
            assert "token" in until(again, RoomRefused).message
            again.send_text(json.dumps(back))
            assert until(again, RoomOpened).room == opened.room
            while not until(student, RoomUpdated).teacher:
                pass
            # It goes for good this time; the room ends after its grace on every replica.
            two.app.state.bus.rooms.registry.grace_s = 1.0  # type: ignore[attr-defined]
        closed = until(student, RoomClosed)
        assert "did not come back" in closed.message


def test_a_client_at_its_room_cap_ends_its_room_whose_teacher_left(queue: RedisServer) -> None:
    with web(queue) as one, web(queue) as two:
        two.app.state.bus.rooms.registry.max_rooms_per_client = 1  # type: ignore[attr-defined]
        with one.websocket_connect(WS) as first, two.websocket_connect(WS) as student:
            first.send_text(json.dumps({"type": "open_room"}))
            gone = until(first, RoomOpened).room
            join(student, gone)
            # Its teacher's page goes (the room waits out its grace) ...
            first.close()
            while until(student, RoomUpdated).teacher:
                pass
            # ... and the same client opens another on the other replica: that room ends at
            # once (its students are told) instead of refusing for the whole grace.
            with two.websocket_connect(WS) as second:
                second.send_text(json.dumps({"type": "open_room"}))
                assert until(second, RoomOpened).room != gone
                assert "opened in its place" in until(student, RoomClosed).message
                # A room whose teacher is here is never ended for another.
                with two.websocket_connect(WS) as third:
                    third.send_text(json.dumps({"type": "open_room"}))
                    assert "1 rooms" in until(third, RoomRefused).message


def test_students_of_a_replica_that_died_are_not_counted_twice(queue: RedisServer) -> None:
    """A replica killed with students on it cannot take them out of the room's count; they join
    again on another replica. Each replica's students count only while its heartbeat lives: a
    room "full" of a dead replica's students takes them again (it refused every one of them)."""
    from jaxscope.bus.rooms import web_key

    client = queue.client()
    with web(queue) as one, one.websocket_connect(WS) as teacher:
        teacher.send_text(json.dumps({"type": "open_room"}))
        opened = until(teacher, RoomOpened)
        most = one.app.state.bus.rooms.registry.max_students  # type: ignore[attr-defined]
        # A replica that died holding the room full, and a live one with two students.
        client.hset(room_key(opened.room), mapping={"n:web-dead": most, "students": most})
        client.hset(room_key(opened.room), "n:web-alive", 2)
        client.set(web_key("web-alive"), "1", ex=60)
        with one.websocket_connect(WS) as student:
            student.send_text(json.dumps({"type": "join_room", "room": opened.room}))
            while not isinstance(joined := next_event(student), (RoomUpdated, RoomRefused)):
                pass
            assert isinstance(joined, RoomUpdated) and joined.students == 3, joined
        client.delete(web_key("web-alive"))


def test_a_join_with_a_malformed_room_id_is_refused_as_such(queue: RedisServer) -> None:
    """A room id is checked before it names a key: ``<room>:log`` named the room's log, a
    stream (Redis answered WRONGTYPE, told the page as "Redis is unreachable")."""
    with web(queue) as one, one.websocket_connect(WS) as teacher:
        teacher.send_text(json.dumps({"type": "open_room"}))
        opened = until(teacher, RoomOpened)
        with one.websocket_connect(WS) as student:
            answers = []
            for room in (f"{opened.room}:log", "x:log", "short"):
                student.send_text(json.dumps({"type": "join_room", "room": room}))
                answers.append(until(student, RoomRefused).message)
            assert join(student, opened.room).room == opened.room
    assert all(a.startswith("not a room id") for a in answers), answers
