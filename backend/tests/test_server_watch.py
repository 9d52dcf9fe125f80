"""``jaxscope watch``'s server side (design 0036): a page that follows the watched file gets its
text at once and after every save, runs it through the ordinary run path (the jaxpr is
``jax.make_jaxpr`` of the new ``f``), and gets a clear problem for a deleted, oversized or
non-UTF-8 file; a page that stops following gets nothing more; a server that watches no file
says so. The server is the real app (TestClient, real worker pool, real file watcher)."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import pytest
from fastapi.testclient import TestClient
from jaxscope.cli import EXIT_USAGE, build_parser, main
from jaxscope.protocol import MAX_CODE_CHARS, JaxprStaged, WatchedFileChanged
from jaxscope.sandbox.request_loop import NOT_WATCHING
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.server.app import create_app
from jaxscope.server.security import TOKEN_COOKIE
from jaxscope.server.watch import WatchedFile
from jaxscope.settings import Limits, Settings
from starlette.websockets import WebSocketDisconnect

from tests.harness import collect, next_event, run_msg

SIN = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2.0\nargs = (jnp.ones(3),)\n"
COS = (
    "import jax.numpy as jnp\ndef f(x, y):\n    return jnp.cos(x) @ y\n"
    "args = (jnp.ones((2, 3)), jnp.ones((3, 4)))\n"
)
WS = "ws://localhost:8000/api/ws"
SETTINGS = Settings(workers=1, limits=Limits(wall_s=20.0), check_exhibits=False)
FOLLOW = json.dumps({"type": "follow", "follow": True})
UNFOLLOW = json.dumps({"type": "follow", "follow": False})

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def snippet(tmp_path: Path) -> Path:
    path = tmp_path / "snippet.py"
    path.write_text(SIN)
    return path


@pytest.fixture
def client(snippet: Path) -> Iterator[TestClient]:
    """The app of ``jaxscope watch``; every request carries the token as the page's do (the
    cookie its first ``?token=`` request got)."""
    app = create_app(SETTINGS, WatchedFile(snippet, "tracing"))
    token = app.state.settings.token
    with TestClient(app, base_url="http://localhost:8000", cookies={TOKEN_COOKIE: token}) as c:
        yield c


def watched(ws: Any) -> WatchedFileChanged:
    event = next_event(ws)
    assert isinstance(event, WatchedFileChanged), event
    return event


def save(path: Path, text: str) -> None:
    """Save as editors that write a new file and rename it over the old one do (a new inode)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def test_follow_gets_the_file_then_each_save_and_runs_it(client: TestClient, snippet: Path) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(FOLLOW)
        first = watched(ws)
        assert (first.path, first.exhibit, first.code, first.problem) == (
            str(snippet.absolute()),
            "tracing",
            SIN,
            None,
        )
        time.sleep(0.5)  # the watcher is up before the first save (it starts with the app)
        save(snippet, COS)
        changed = watched(ws)
        assert changed.code == COS and changed.problem is None
        # The page runs the new code through the ordinary run path (the sandbox).
        ws.send_text(run_msg("w1", changed.code))
        events = collect(ws, "w1")
        assert events[-1].type == "run_finished"
        staged = next(e for e in events if isinstance(e, JaxprStaged))
        new = load_snippet(COS)
        assert staged.jaxpr.text == str(jax.make_jaxpr(new.f)(*new.args))
        # A save in place (the same inode) is seen too.
        snippet.write_text(SIN)
        assert watched(ws).code == SIN


def test_stop_following_gets_nothing_more(client: TestClient, snippet: Path) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(FOLLOW)
        assert watched(ws).code == SIN
        ws.send_text(UNFOLLOW)
        time.sleep(0.3)
        save(snippet, COS)
        time.sleep(2.0)  # longer than the watcher's debounce (0.4 s): a push would be queued
        ws.send_text(run_msg("w2", SIN))
        texts = []
        while True:
            event = next_event(ws)
            texts.append(event.type)
            if event.type in ("run_finished", "run_failed"):
                break
        assert "watched_file_changed" not in texts
        assert texts[-1] == "run_finished"


def test_deleted_file_says_so_and_back_again(client: TestClient, snippet: Path) -> None:
    with client.websocket_connect(WS) as ws:
        ws.send_text(FOLLOW)
        assert watched(ws).code == SIN
        time.sleep(0.5)
        snippet.unlink()
        gone = watched(ws)
        assert gone.code is None
        assert gone.problem == (
            f"{snippet.absolute()} was deleted or renamed: the editor keeps the last code, and "
            "the page reruns when a file of that name is saved again"
        )
        snippet.write_text(COS)
        back = watched(ws)
        while back.code is None:  # the create and the write may come as two changes
            back = watched(ws)
        assert back.code == COS


def test_the_watched_file_is_served_only_with_the_token(snippet: Path) -> None:
    """On loopback too: every local user can reach a loopback port, and ``follow`` would hand the
    file (readable by its owner alone) and every later save to any of them (issue 31). Without
    the token, or with a wrong one, no page, health or websocket; with it, a page from another
    origin is still refused; the token from the page's first ``?token=`` (its cookie) works."""
    snippet.chmod(0o600)
    app = create_app(SETTINGS, WatchedFile(snippet, "tracing"))
    token = app.state.settings.token
    assert isinstance(token, str) and len(token) >= 20
    with TestClient(app, base_url="http://localhost:8000") as c:
        for query in ("", "?token=wrong"):
            assert c.get(f"/api/health{query}").status_code == 401
            assert c.get(f"/{query}").status_code == 401
            with pytest.raises(WebSocketDisconnect) as info, c.websocket_connect(WS + query) as ws:
                ws.send_text(FOLLOW)
                ws.receive_text()
            assert info.value.code == 1008
        with (
            pytest.raises(WebSocketDisconnect) as info,
            c.websocket_connect(
                f"{WS}?token={token}", headers={"origin": "http://evil.example"}
            ) as ws,
        ):
            ws.receive_text()
        assert info.value.code == 1008
        # The page opened with the printed URL gets the cookie its scripts and socket then carry.
        assert c.get(f"/?token={token}&follow=1").status_code == 200
        with c.websocket_connect(WS, headers={"origin": "http://localhost:8000"}) as ws:
            ws.send_text(FOLLOW)
            assert watched(ws).code == SIN


def test_a_watched_file_keeps_the_token_it_was_given(snippet: Path) -> None:
    """``JAXSCOPE_TOKEN`` (or ``Settings.token``) is the watched server's token, not replaced."""
    given = dataclasses.replace(SETTINGS, token="a-token-the-user-chose")
    app = create_app(given, WatchedFile(snippet, "tracing"))
    assert app.state.settings.token == "a-token-the-user-chose"
    # A server that watches no file on loopback still needs none (what `serve` asks).
    assert create_app(SETTINGS).state.settings.token is None


def test_read_problems(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_text("x = 1\n" * (MAX_CODE_CHARS // 6 + 1))
    big = WatchedFile(path, "tracing").read()
    assert big.code is None
    assert big.problem == (
        f"{path} is longer than 200,000 characters, the most jaxscope accepts: nothing was run, "
        "the editor keeps the last code"
    )
    path.write_bytes(b"x = '\xff'\n")
    bad = WatchedFile(path, "tracing").read()
    assert bad.code is None and bad.problem is not None
    assert bad.problem.startswith(f"{path} is not UTF-8 text (invalid start byte)")
    # At exactly the limit the code is sent (a byte-order mark is not part of the code).
    path.write_bytes(b"\xef\xbb\xbf" + b"#" * MAX_CODE_CHARS)
    assert WatchedFile(path, "tracing").read().code == "#" * MAX_CODE_CHARS


def test_a_server_without_a_watched_file_says_so() -> None:
    with (
        TestClient(create_app(SETTINGS), base_url="http://localhost:8000") as c,
        c.websocket_connect(WS) as ws,
    ):
        ws.send_text(FOLLOW)
        event = watched(ws)
        assert (event.path, event.code, event.problem) == ("", None, NOT_WATCHING)


def test_watch_command_line() -> None:
    ns = build_parser().parse_args(
        ["watch", "f.py", "--exhibit", "tracing", "--port", "8123", "--no-browser"]
    )
    assert (ns.command, str(ns.file), ns.exhibit, ns.port, ns.no_browser, ns.host) == (
        "watch",
        "f.py",
        "tracing",
        8123,
        True,
        None,
    )


def test_watch_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.py"
    path.write_text(SIN)
    assert main(["watch", str(path), "--exhibit", "nope", "--no-browser"]) == EXIT_USAGE
    assert "unknown exhibit 'nope'" in capsys.readouterr().err
    missing = tmp_path / "missing.py"
    assert main(["watch", str(missing), "--exhibit", "tracing", "--no-browser"]) == EXIT_USAGE
    assert capsys.readouterr().err == f"jaxscope watch: {missing} is not a file\n"
