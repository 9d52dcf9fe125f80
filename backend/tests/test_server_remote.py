"""The hosted variant: ``jaxscope pool --socket`` in its own process, the app relaying each
websocket to it (``Settings.pool_socket``), and what the browser sees when the pool goes away."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import pytest
from fastapi.testclient import TestClient
from jaxscope.protocol import EventModel, JaxprStaged, RunFailed
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.server.app import create_app
from jaxscope.settings import Settings

from tests.harness import CASES, REPO, collect, next_event, run_msg
from tests.test_server import SIN

WS = "ws://127.0.0.1:8000/api/ws"  # a loopback Host (TestClient's default is testserver)
JAXSCOPE = str(Path(sys.executable).parent / "jaxscope")


def start_pool(socket_path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [JAXSCOPE, "pool", "--socket", str(socket_path), "--workers", "1", "--timeout", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not socket_path.exists():
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
    if proc.stdout is not None:
        proc.stdout.close()


@contextlib.contextmanager
def relayed(tmp_path: Path) -> Iterator[tuple[Any, subprocess.Popen[str]]]:
    """A websocket on a web tier relaying to a fresh pool of its own (the test may stop it)."""
    socket_path = tmp_path / "pool.sock"
    proc = start_pool(socket_path)
    app = create_app(Settings(pool_socket=socket_path, check_exhibits=False))
    try:
        with (
            TestClient(app, base_url="http://127.0.0.1:8000") as client,
            client.websocket_connect(WS) as ws,
        ):
            yield ws, proc
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Path]]:
    socket_path = tmp_path_factory.mktemp("pool") / "pool.sock"
    proc = start_pool(socket_path)
    app = create_app(Settings(pool_socket=socket_path, check_exhibits=False))
    try:
        with TestClient(app, base_url="http://127.0.0.1:8000") as client:
            yield client, socket_path
    finally:
        stop(proc)


def test_socket_is_private(hosted: tuple[TestClient, Path]) -> None:
    _, socket_path = hosted
    assert socket_path.stat().st_mode & 0o777 == 0o660


def test_health_names_the_socket(hosted: tuple[TestClient, Path]) -> None:
    client, socket_path = hosted
    assert client.get("/api/health").json()["pool"] == {"socket": str(socket_path)}


def test_round_trip_through_the_pool(hosted: tuple[TestClient, Path]) -> None:
    client, _ = hosted
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("h1", SIN))
        events = collect(ws, "h1")
        assert [e.seq for e in events] == list(range(len(events)))
        assert events[-1].type == "run_finished"
        staged = next(e for e in events if isinstance(e, JaxprStaged))
        snippet = load_snippet(SIN)
        assert staged.jaxpr.text == str(jax.make_jaxpr(snippet.f)(*snippet.args))
        # Same session, next run: C01's tracer error with its line.
        ws.send_text(run_msg("h2", (CASES / "C01_escape_jit_broken.py").read_text()))
        failed = collect(ws, "h2")[-1]
        assert isinstance(failed, RunFailed)
        assert (failed.kind, failed.error_class) == ("tracer_error", "TracerBoolConversionError")
        assert failed.source is not None and failed.source.line == 9
        # Pretty-printed JSON (raw newlines) is re-framed by the web tier, not split.
        ws.send_text(
            json.dumps({"type": "run", "run_id": "h3", "exhibit": "x", "code": ""}, indent=2)
        )
        bad = collect(ws, "h3")[-1]
        assert isinstance(bad, RunFailed) and bad.kind == "invalid_request"
        ws.send_text("{broken")
        bad = next_event(ws)
        assert isinstance(bad, RunFailed) and bad.kind == "invalid_request"


def test_timeout_in_the_pool(hosted: tuple[TestClient, Path]) -> None:
    client, _ = hosted
    with client.websocket_connect(WS) as ws:
        ws.send_text(run_msg("loop", "while True:\n    pass\n"))
        failed = collect(ws, "loop")[-1]
        assert isinstance(failed, RunFailed) and failed.kind == "timeout"
        assert "5 s" in failed.message


def next_run_event(ws: Any) -> EventModel:
    """The next event that is a step of a run: ``run_queued`` (the pool's first worker may
    still be starting: its template imports JAX, design 0053) is not."""
    while (event := next_event(ws)).type == "run_queued":
        pass
    return event


def test_pool_lost_mid_run_still_ends_the_run(tmp_path: Path) -> None:
    with relayed(tmp_path) as (ws, proc):
        ws.send_text(run_msg("doomed", "import time\ntime.sleep(60)\n"))
        first = next_run_event(ws)
        assert first.type == "run_started"
        stop(proc)
        events = [first, *collect(ws, "doomed")]
        assert [e.seq for e in events] == list(range(len(events)))
        last = events[-1]
        assert isinstance(last, RunFailed) and last.kind == "worker_crashed"
        assert "lost" in last.message
        ws.send_text(run_msg("after", SIN))
        (after,) = collect(ws, "after")
        assert isinstance(after, RunFailed) and after.kind == "worker_crashed"


def test_a_detail_answer_does_not_set_back_the_seq_of_the_run_the_relay_ends(
    tmp_path: Path,
) -> None:
    """A detail request while the run runs is refused with ``detail_failed`` (seq 0). When the
    pool is then lost, the ``run_failed`` the relay makes must take the seq after the run's
    last event, not after the refusal's: the page drops an event whose seq it holds already,
    and the run would stay "running"."""
    with relayed(tmp_path) as (ws, proc):
        ws.send_text(run_msg("doomed", "import time\nprint('hello')\ntime.sleep(60)\n"))
        seen = [next_run_event(ws)]
        while seen[-1].type != "stdout_printed":
            seen.append(next_run_event(ws))
        ws.send_text(json.dumps({"type": "detail", "run_id": "doomed", "detail_id": "d0"}))
        refused = next_event(ws)
        assert refused.type == "detail_failed" and refused.seq == 0
        stop(proc)
        rest = collect(ws, "doomed")
        run = [e for e in [*seen, *rest] if e.type != "detail_failed"]
        assert [e.seq for e in run] == list(range(len(run)))
        assert isinstance(run[-1], RunFailed) and run[-1].kind == "worker_crashed"


def test_unreachable_pool(tmp_path: Path) -> None:
    app = create_app(Settings(pool_socket=tmp_path / "absent.sock", check_exhibits=False))
    with (
        TestClient(app, base_url="http://127.0.0.1:8000") as client,
        client.websocket_connect(WS) as ws,
    ):
        ws.send_text(run_msg("r", SIN))
        (failed,) = collect(ws, "r")
        assert isinstance(failed, RunFailed) and failed.kind == "worker_crashed"
        assert "not reachable" in failed.message
