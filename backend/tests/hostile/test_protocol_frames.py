"""Malformed websocket frames and cancels that race their run (issue 12, point 6, items 1-2).

Every malformed frame gets exactly one ``run_failed`` ``invalid_request`` whose ``run_id`` is
readable (lone surrogates replaced), and the connection and the run in progress carry on. A
cancel sent right behind its run, before the session made the run current, cancels it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jaxscope.protocol import (
    EVENT_ADAPTER,
    MAX_CODE_CHARS,
    DetailFailed,
    EventModel,
    RunFailed,
    RunFinished,
    RunRequest,
)
from jaxscope.sandbox.request_loop import serve_requests
from jaxscope.server.app import create_app

from tests.harness import SandboxHarness, assert_one_terminal, collect, next_event, run_msg
from tests.test_server import BASE, SETTINGS, SIN, WS
from tests.test_server_remote import relayed

# A run that is still going when the hostile frame arrives (it sleeps while loading).
SLOW = "import time\ntime.sleep(1.0)\n" + SIN
DEEP = 5000


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(SETTINGS), base_url=BASE) as c:
        yield c


def read_run(ws: Any, run_id: str) -> tuple[list[EventModel], list[EventModel]]:
    """Events from ``ws`` up to ``run_id``'s terminal one: (that run's, all others)."""
    mine: list[EventModel] = []
    others: list[EventModel] = []
    while True:
        event = next_event(ws)
        (mine if event.run_id == run_id else others).append(event)
        if event.run_id == run_id and event.type in ("run_finished", "run_failed"):
            return mine, others


def run_then_cancel(run_id: str, code: str = SLOW) -> list[str]:
    """A run request and its cancel."""
    return [run_msg(run_id, code), json.dumps({"type": "cancel", "run_id": run_id})]


# (frame, the run_id the answer carries, a piece of its message)
FRAMES: dict[str, tuple[str | bytes, str, str]] = {
    "escaped lone surrogate in run_id": (
        '{"type": "run", "run_id": "\\ud800", "exhibit": "tracing", "code": "x = 1"}',
        "\ufffd",
        "Invalid JSON",
    ),
    "raw lone surrogate in run_id": (
        '{"type": "run", "run_id": "s\ud800", "exhibit": "tracing", "code": "x = 1"}',
        "s\ufffd",
        "not valid UTF-8",
    ),
    "binary frame, invalid UTF-8": (
        b'{"type": "run", "run_id": "b\xff\xfe", "exhibit": "tracing", "code": "x = 1"}',
        "b\ufffd\ufffd",
        "not valid UTF-8",
    ),
    "list nested 5000 deep": ("[" * DEEP + "]" * DEEP, "", "recursion limit"),
    "object nested 5000 deep": ('{"a":' * DEEP + "1" + "}" * DEEP, "", "recursion limit"),
    "options nested 5000 deep": (
        '{"type": "run", "run_id": "d", "exhibit": "tracing", "code": "x", "options": '
        + '{"a":' * DEEP
        + "1"
        + "}" * DEEP
        + "}",
        "",
        "recursion limit",
    ),
    "not JSON": ("hello, server", "", "Invalid JSON"),
    "JSON but not an object": ("[1, 2, 3]", "", "Input should be"),
    "empty frame": ("", "", "Invalid JSON"),
    "oversized code": (
        run_msg("big", "#" * (MAX_CODE_CHARS + 1)),
        "big",
        f"accepts at most {MAX_CODE_CHARS:,}",
    ),
    "unknown field": (
        '{"type": "run", "run_id": "u", "exhibit": "tracing", "code": "x", "zzz": 1}',
        "u",
        "run.zzz: Extra inputs are not permitted",
    ),
    "unknown field with a 100k name": (
        '{"type": "cancel", "run_id": "k", "' + "n" * 100_000 + '": 1}',
        "k",
        "Extra inputs are not permitted",
    ),
    "unknown type": ('{"type": "details", "run_id": "t"}', "t", "does not match"),
    "run_id too long": (run_msg("r" * 65, "x = 1"), "r" * 64, "run_id"),
}


@pytest.mark.parametrize("detail_id", ["", "d" * 65], ids=["empty", "65 chars"])
def test_a_malformed_detail_request_is_refused_as_a_detail(
    client: TestClient, detail_id: str
) -> None:
    """Break-it review: a detail request with a bad id for a finished run was answered with a
    run_failed invalid_request of that run: a second terminal event for it. It is a
    detail_failed (not gone, not transient), naming the id asked (cut to 64 characters)."""
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("done", SIN))
        assert isinstance(assert_one_terminal(collect(ws, "done")), RunFinished)
        ws.send_text(json.dumps({"type": "detail", "run_id": "done", "detail_id": detail_id}))
        answer = EVENT_ADAPTER.validate_json(ws.receive_text())
        assert isinstance(answer, DetailFailed), answer
        assert (answer.run_id, answer.detail_id, answer.gone) == ("done", detail_id[:64], False)
        assert not answer.transient and "detail_id" in answer.message
        ws.send_text(run_msg("after", SIN))
        assert isinstance(assert_one_terminal(collect(ws, "after")), RunFinished)


@pytest.mark.parametrize("name", list(FRAMES))
def test_malformed_frame_is_answered_and_the_run_goes_on(client: TestClient, name: str) -> None:
    frame, run_id, message = FRAMES[name]
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("busy", SLOW))
        if isinstance(frame, bytes):
            ws.send_bytes(frame)
        else:
            ws.send_text(frame)
        busy, others = read_run(ws, "busy")
        # The hostile frame's answer, exactly one, serializable, while the run went on.
        assert len(others) == 1, others
        (answer,) = others
        assert isinstance(answer, RunFailed)
        assert (answer.kind, answer.run_id, answer.seq) == ("invalid_request", run_id, 0)
        assert message in answer.message
        assert len(answer.message) <= 1000
        assert isinstance(assert_one_terminal(busy), RunFinished)
        # The connection still serves.
        ws.send_text(run_msg("after", SIN))
        assert isinstance(assert_one_terminal(collect(ws, "after")), RunFinished)


def test_cancel_right_behind_its_run_cancels_it(client: TestClient) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("c1", "while True:\n    pass\n"))
        ws.send_text(json.dumps({"type": "cancel", "run_id": "c1"}))
        failed = assert_one_terminal(collect(ws, "c1"))
        assert isinstance(failed, RunFailed) and failed.kind == "cancelled"
        ws.send_text(run_msg("c2", SIN))
        assert isinstance(assert_one_terminal(collect(ws, "c2")), RunFinished)


def test_cancel_of_another_run_id_leaves_the_run_alone(client: TestClient) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("mine", SIN))
        ws.send_text(json.dumps({"type": "cancel", "run_id": "someone-else"}))
        assert isinstance(assert_one_terminal(collect(ws, "mine")), RunFinished)


def serve_script(
    sandbox: SandboxHarness, script: list[str], until: list[str]
) -> dict[str, list[EventModel]]:
    """Drive :func:`serve_requests` on a real session: each text of ``script`` is delivered
    without yielding to the event loop (like frames already in a transport's buffer), and the
    next ones only after the run named in ``until`` (one entry per text; "" for none) ended.
    Returns each run_id's events."""
    events: dict[str, list[EventModel]] = {}
    ended: dict[str, asyncio.Event] = {}

    async def drive() -> None:
        texts = iter(zip(script, until, strict=True))

        async def receive() -> str | None:
            for text, wait_for in texts:
                if wait_for:
                    await asyncio.wait_for(ended.setdefault(wait_for, asyncio.Event()).wait(), 60)
                return text
            # All sent: wait for every run to end, then hang up.
            for run_id in {json.loads(t)["run_id"] for t in script if '"run"' in t}:
                await asyncio.wait_for(ended.setdefault(run_id, asyncio.Event()).wait(), 60)
            return None

        async def send(text: str) -> None:
            event = EVENT_ADAPTER.validate_json(text)
            events.setdefault(event.run_id, []).append(event)
            if event.type in ("run_finished", "run_failed"):
                ended.setdefault(event.run_id, asyncio.Event()).set()

        await serve_requests(receive, send, sandbox.session())

    sandbox.call(drive())
    return events


def test_cancel_in_the_same_buffer_as_its_run_cancels_it(sandbox: SandboxHarness) -> None:
    script = [*run_then_cancel("x1"), run_msg("x2", SIN)]
    events = serve_script(sandbox, script, ["", "", "x1"])
    failed = assert_one_terminal(events["x1"])
    assert isinstance(failed, RunFailed) and failed.kind == "cancelled"
    assert [e.type for e in events["x1"]] == ["run_failed"]  # no worker saw it
    assert isinstance(assert_one_terminal(events["x2"]), RunFinished)


def test_run_in_the_same_buffer_as_the_previous_run_cancels_it(sandbox: SandboxHarness) -> None:
    # The previous run is cancelled before it started, not run to its end first.
    script = [run_msg("y1", "while True:\n    pass\n"), run_msg("y2", SIN)]
    events = serve_script(sandbox, script, ["", ""])
    failed = assert_one_terminal(events["y1"])
    assert isinstance(failed, RunFailed) and failed.kind == "cancelled"
    assert isinstance(assert_one_terminal(events["y2"]), RunFinished)


def test_hosted_pool_answers_bad_frames_and_early_cancels(tmp_path: Path) -> None:
    """The hosted relay (``serve --pool-socket``) and the pool behind it share the request loop:
    the same frames are answered, and a cancel right behind its run cancels it in the pool."""
    with relayed(tmp_path) as (ws, _):
        for name in ("binary frame, invalid UTF-8", "object nested 5000 deep", "unknown type"):
            frame, run_id, message = FRAMES[name]
            if isinstance(frame, bytes):
                ws.send_bytes(frame)
            else:
                ws.send_text(frame)
            answer = next_event(ws)
            assert isinstance(answer, RunFailed) and answer.kind == "invalid_request"
            assert (answer.run_id, message in answer.message) == (run_id, True)
        oversized = RunRequest(run_id="big", exhibit="tracing", code="#" * (MAX_CODE_CHARS + 1))
        ws.send_text(oversized.model_dump_json())
        (big,) = collect(ws, "big")
        assert isinstance(big, RunFailed) and big.kind == "invalid_request"
        ws.send_text(run_msg("h1", "while True:\n    pass\n"))
        ws.send_text(json.dumps({"type": "cancel", "run_id": "h1"}))
        failed = assert_one_terminal(collect(ws, "h1"))
        assert isinstance(failed, RunFailed) and failed.kind == "cancelled"
        ws.send_text(run_msg("h2", SIN))
        assert isinstance(assert_one_terminal(collect(ws, "h2")), RunFinished)
