"""``jaxscope.server.frames``: events coalesced into websocket frames, in order, with
back-pressure, and what a page reads from them (``tests.harness.frame_events``)."""

from __future__ import annotations

import asyncio
import json

import pytest
from jaxscope.protocol import StageStarted
from jaxscope.server.frames import FRAME_BYTES, WINDOW_S, FrameSender, frame_objects, frame_text

from testkit import run_async
from tests.harness import frame_events


def event_text(seq: int) -> str:
    return StageStarted(run_id="r", seq=seq, stage="trace").model_dump_json()


def test_frame_text_is_the_object_alone_or_an_array() -> None:
    one, two = event_text(0), event_text(1)
    assert frame_text([one]) == one
    assert json.loads(frame_text([one, two])) == [json.loads(one), json.loads(two)]
    assert [e.seq for e in frame_events(frame_text([one, two]))] == [0, 1]
    assert [e.seq for e in frame_events(one)] == [0]


class Socket:
    """A websocket's send_text that records frames; ``slow_s`` per send (a client that reads
    slowly)."""

    def __init__(self, slow_s: float = 0.0) -> None:
        self.frames: list[str] = []
        self.slow_s = slow_s
        self.sending = 0
        self.most_sending = 0

    async def send_text(self, text: str) -> None:
        self.sending += 1
        self.most_sending = max(self.most_sending, self.sending)
        await asyncio.sleep(self.slow_s)
        self.frames.append(text)
        self.sending -= 1

    def seqs(self) -> list[int]:
        return [e.seq for frame in self.frames for e in frame_events(frame)]


def test_events_in_a_burst_share_a_frame_and_keep_their_order() -> None:
    async def main() -> Socket:
        socket = Socket()
        sender = FrameSender(socket.send_text)
        for seq in range(500):
            await sender.send(event_text(seq))
        await asyncio.sleep(WINDOW_S * 5)
        return socket

    socket = run_async(main())
    assert socket.seqs() == list(range(500))
    assert len(socket.frames) == 1


def test_a_lone_event_goes_out_as_its_object_within_the_window() -> None:
    async def main() -> tuple[Socket, float]:
        socket = Socket()
        sender = FrameSender(socket.send_text)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await sender.send(event_text(7))
        while not socket.frames:
            await asyncio.sleep(0.001)
        return socket, loop.time() - t0

    socket, waited = run_async(main())
    assert socket.frames == [event_text(7)]
    assert waited < WINDOW_S + 0.2


def test_a_full_frame_goes_at_once_and_a_slow_client_holds_the_sender_back() -> None:
    text = event_text(0)
    per_frame = -(-FRAME_BYTES // len(text))  # events that fill a frame

    async def main() -> tuple[Socket, int]:
        socket = Socket(slow_s=0.05)
        sender = FrameSender(socket.send_text)
        sent = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 0.3
        # The sender waits for each full frame: in 0.3 s a client taking 50 ms a frame lets
        # about 6 frames through, not an unbounded backlog.
        while loop.time() < deadline:
            await sender.send(event_text(sent))
            sent += 1
        await sender.flush()
        return socket, sent

    socket, sent = run_async(main())
    assert socket.seqs() == list(range(sent))
    assert sent <= 10 * per_frame
    assert all(len(f) <= FRAME_BYTES for f in socket.frames)
    assert socket.most_sending == 1  # one frame at a time: never interleaved


def test_a_frame_is_over_the_bound_only_as_one_event() -> None:
    small, big = event_text(0), "x" * (FRAME_BYTES + 10)

    async def main() -> Socket:
        socket = Socket()
        sender = FrameSender(socket.send_text)
        await sender.send(small)
        await sender.send(big)  # alone: not appended to the frame that holds `small`
        await sender.send(small)
        await sender.flush()
        return socket

    assert run_async(main()).frames == [small, big, small]


def test_close_drops_what_waits() -> None:
    async def main() -> Socket:
        socket = Socket()
        sender = FrameSender(socket.send_text)
        await sender.send(event_text(0))
        sender.close()
        await sender.send(event_text(1))
        await asyncio.sleep(WINDOW_S * 5)
        return socket

    assert run_async(main()).frames == []


@pytest.mark.parametrize("frame", ["[]", "[1]", '{"type": "stage_started"}'])
def test_what_is_not_an_event_is_refused_by_the_test_reader(frame: str) -> None:
    if frame == "[]":
        assert frame_events(frame) == []
    else:
        with pytest.raises(ValueError):
            frame_events(frame)


@pytest.mark.parametrize("seed", range(3))
def test_two_senders_on_one_socket_keep_the_bound_and_their_order(seed: int) -> None:
    """A run's events and a room's relay share a socket: a frame of several events stays within
    FRAME_BYTES however their sends interleave with a slow client (the check is made again
    after waiting for the socket), and each sender's events keep their order."""
    import random

    rng = random.Random(seed)

    async def main() -> Socket:
        socket = Socket(slow_s=0.005)
        sender = FrameSender(socket.send_text)

        async def producer(name: str) -> None:
            for seq in range(120):
                pad = "a" * rng.choice([100, 1_000, 100_000, 200_000, 250_000])
                await sender.send(json.dumps({"run_id": name, "seq": seq, "pad": pad}))
                if rng.random() < 0.3:
                    await asyncio.sleep(0.001)

        await asyncio.gather(producer("A"), producer("B"))
        await sender.flush()
        return socket

    socket = run_async(main())
    seen: dict[str, list[int]] = {"A": [], "B": []}
    for frame in socket.frames:
        items = frame_objects(frame)
        assert len(items) == 1 or len(frame.encode()) <= FRAME_BYTES, len(frame)
        for item in items:
            seen[item["run_id"]].append(item["seq"])
    assert seen == {"A": list(range(120)), "B": list(range(120))}


def test_the_bound_counts_utf8_bytes() -> None:
    """Printed emoji are 4 bytes each on the wire (the JSON keeps them as they are)."""
    text = StageStarted(run_id="😀" * 40_000, seq=0, stage="trace").model_dump_json()
    assert len(text.encode()) > 3 * len(text) // 2

    async def main() -> Socket:
        socket = Socket()
        sender = FrameSender(socket.send_text)
        for _ in range(6):
            await sender.send(text)
        await sender.flush()
        return socket

    socket = run_async(main())
    assert all(len(frame_objects(f)) == 1 or len(f.encode()) <= FRAME_BYTES for f in socket.frames)
    assert sum(len(frame_objects(f)) for f in socket.frames) == 6
