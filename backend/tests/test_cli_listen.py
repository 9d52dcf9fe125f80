"""``jaxscope serve`` and ``jaxscope watch`` as a user starts them (subprocesses, no warm
workers): the URL is printed only once the port is bound and listening, a busy port is a clear
error before anything is announced (issue 31), and ``watch``'s printed URL carries the token
that its server asks of every request, on loopback too (design 0052)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from jaxscope.cli import EXIT_USAGE
from jaxscope.protocol import EVENT_ADAPTER, WatchedFileChanged
from jaxscope.server.launch import redirect_file
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from tests.harness import REPO

JAXSCOPE = str(Path(sys.executable).parent / "jaxscope")
# No warm workers, no exhibit check: these tests start servers, not runs.
ENV = {**os.environ, "JAXSCOPE_WORKERS": "0", "JAXSCOPE_CHECK_EXHIBITS": "0"}
SIN = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x)\nargs = (jnp.ones(3),)\n"

pytestmark = pytest.mark.timeout(120)


@contextmanager
def busy_port() -> Iterator[int]:
    """A loopback port someone else listens on."""
    with socket.create_server(("127.0.0.1", 0)) as other:
        yield other.getsockname()[1]


def watch_argv(path: Path, port: int) -> list[str]:
    return [JAXSCOPE, "watch", str(path), "--exhibit", "tracing", f"--port={port}", "--no-browser"]


@pytest.mark.parametrize("command", ["serve", "watch"])
def test_a_busy_port_fails_before_any_url_is_printed(tmp_path: Path, command: str) -> None:
    snippet = tmp_path / "f.py"
    snippet.write_text(SIN)
    with busy_port() as port:
        argv = [JAXSCOPE, "serve", "--port", str(port)]
        if command == "watch":
            argv = watch_argv(snippet, port)
        done = subprocess.run(argv, capture_output=True, text=True, env=ENV, cwd=REPO, timeout=60)
    assert done.returncode == EXIT_USAGE, done
    assert "serving at" not in done.stdout and "following" not in done.stdout
    assert done.stderr.strip().splitlines()[-1] == (
        f"jaxscope: cannot serve: port {port} on 127.0.0.1 is already in use (by another "
        "jaxscope or another program, perhaps another user's): choose a free one with --port "
        "(make serve PORT=N)"
    )


def test_watch_prints_its_token_url_once_it_listens(tmp_path: Path) -> None:
    snippet = tmp_path / "f.py"
    snippet.write_text(SIN)
    snippet.chmod(0o600)
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(
        watch_argv(snippet, 0),  # port 0: the line names the port the OS gave
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=ENV,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        serving = proc.stdout.readline().strip()
        prefix = "jaxscope is serving at http://127.0.0.1:"
        assert serving.startswith(prefix), serving
        port_text, _, token = serving[len(prefix) :].partition("/?token=")
        port = int(port_text)
        assert len(token) >= 20
        # Printed after the bind: the port listens now, with no retry.
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        page = f"http://127.0.0.1:{port}/?token={token}&follow=1"
        assert proc.stdout.readline().strip() == f"following {snippet} in tracing: {page}"
        base = f"http://127.0.0.1:{port}"
        # Another local user, without the token, gets neither the page nor the file.
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/api/health", timeout=30)
        assert refused.value.code == 401
        with pytest.raises(InvalidStatus):
            with connect(f"ws://127.0.0.1:{port}/api/ws", open_timeout=30) as ws:
                ws.send(json.dumps({"type": "follow", "follow": True}))
                ws.recv(timeout=10)
        # The user's browser, on the printed URL: the page, then its socket with the cookie.
        with urllib.request.urlopen(page, timeout=30) as response:
            assert response.status == 200
            cookie = response.headers["set-cookie"].split(";")[0]
        with connect(
            f"ws://127.0.0.1:{port}/api/ws",
            origin=Origin(base),
            additional_headers={"cookie": cookie},
            open_timeout=30,
        ) as ws:
            ws.send(json.dumps({"type": "follow", "follow": True}))
            event = EVENT_ADAPTER.validate_json(ws.recv(timeout=10))
        assert isinstance(event, WatchedFileChanged)
        assert (event.path, event.code) == (str(snippet), SIN)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=15)
        if proc.stdout is not None:
            proc.stdout.close()
        log.close()


def test_the_browser_is_opened_on_a_private_redirect_page() -> None:
    """The token never goes on a browser's command line (``/proc/PID/cmdline`` is readable by
    every local user): the browser gets a file only this user can read that redirects to it."""
    url = 'http://127.0.0.1:8000/?token=a"b<c&follow=1'
    page = redirect_file(url)
    try:
        assert page.parent.stat().st_mode & 0o777 == 0o700
        assert page.stat().st_mode & 0o777 == 0o600
        text = page.read_text()
        quoted = "http://127.0.0.1:8000/?token=a&quot;b&lt;c&amp;follow=1"
        assert f'<meta http-equiv="refresh" content="0;url={quoted}">' in text
        assert url not in text
    finally:
        shutil.rmtree(page.parent)


def test_watch_removes_its_redirect_page_when_terminated(tmp_path: Path) -> None:
    """SIGTERM (uvicorn raises it again after its graceful shutdown) still removes the page."""
    snippet = tmp_path / "f.py"
    snippet.write_text(SIN)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    opened = tmp_path / "opened"
    # webbrowser runs $BROWSER with the URL: here a shell that writes down what it was given.
    browser = f"sh -c 'echo \"$0\" > {opened}' %s"
    env = {**ENV, "TMPDIR": str(private_tmp), "BROWSER": browser}
    argv = watch_argv(snippet, 0)[:-1]  # without --no-browser
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO
    )
    try:
        deadline = time.monotonic() + 60
        while not opened.exists() or not opened.read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        uri = opened.read_text().strip()
        assert uri.startswith(f"file://{private_tmp}/jaxscope-open-") and "token" not in uri
        page = Path(uri.removeprefix("file://"))
        assert "token=" in page.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM
        assert list(private_tmp.iterdir()) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
