"""``jaxscope watch FILE --exhibit tracing`` in real Chromium (design 0036): the page opened with
``?follow=1`` shows the file's path, runs the file, reruns it when it is saved on disk (the
jaxpr shown is ``jax.make_jaxpr`` of the new ``f``), keeps the editor read-only while it
follows, and Stop following gives the editor back and stops applying saves."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jax
import pytest
from jaxscope.local_server import free_port
from jaxscope.sandbox.snippet import load_snippet
from playwright.sync_api import Page, expect

from e2e.browser import RUN_TIMEOUT_MS, editor_text

SIN = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) * 2.0\n\nargs = (jnp.ones(3),)\n"
COS = (
    "import jax.numpy as jnp\n\ndef f(x, y):\n    return jnp.cos(x) @ y\n\n"
    "args = (jnp.ones((2, 3)), jnp.ones((3, 4)))\n"
)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def watched_file() -> Path:
    path = Path(tempfile.mkdtemp(prefix="jaxscope-watch-")) / "my_snippet.py"
    path.write_text(SIN)
    return path


@pytest.fixture(scope="session")
def watch_url(watched_file: Path) -> Iterator[str]:
    """A ``jaxscope watch`` of ``watched_file`` beside the suite's ``jaxscope serve``: the page
    URL it prints (with its token, which a watched file's server asks of every request, and
    ``follow=1``: design 0052), once its server answers. Tests open it by its full URL:
    overriding ``base_url`` does not reach pytest-playwright's session-scoped context arguments
    once another module has made them (the page then opened the suite's server, which watches
    no file)."""
    port = free_port()
    exe = Path(sys.executable).parent / "jaxscope"
    log = Path(tempfile.mkdtemp(prefix="jaxscope-watch-log-")) / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [exe, "watch", watched_file, "--exhibit", "tracing", f"--port={port}", "--no-browser"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield printed_page(proc, log, port)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def printed_page(proc: subprocess.Popen[bytes], log: Path, port: int) -> str:
    """The page URL ``jaxscope watch`` printed (``following FILE in EXHIBIT: URL``), once its
    ``/api/health`` answers to the URL's token."""
    deadline = time.monotonic() + 60
    while True:
        found = re.search(r"^following .* in tracing: (http://\S+)$", log.read_text(), re.M)
        if found:
            page = found.group(1)
            token = parse_qs(urlsplit(page).query)["token"][0]
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/health?token={token}", timeout=1
                ):
                    return page
            except OSError:
                pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"jaxscope watch did not come up:\n{log.read_text()}")
        time.sleep(0.05)


def jaxpr_of(source: str) -> str:
    snippet = load_snippet(source)
    return str(jax.make_jaxpr(snippet.f)(*snippet.args))


def shown_jaxpr(page: Page) -> str:
    fold = page.get_by_test_id("jaxpr-fold")
    if fold.count() and fold.is_checked():
        fold.uncheck()
    return page.get_by_test_id("jaxpr-text").inner_text().strip()


def wait_for_jaxpr(page: Page, source: str) -> None:
    want = jaxpr_of(source)
    deadline = time.monotonic() + RUN_TIMEOUT_MS / 1000
    while shown_jaxpr(page) != want:
        assert time.monotonic() < deadline, f"the page shows\n{shown_jaxpr(page)}\nnot\n{want}"
        page.wait_for_timeout(200)


def save(path: Path, text: str) -> None:
    """As editors save: a new file renamed over the old one."""
    tmp = path.with_name(path.name + ".swp")
    tmp.write_text(text)
    tmp.replace(path)


def test_follow_a_file(
    page: Page, console_errors: list[str], screenshots: Path, watched_file: Path, watch_url: str
) -> None:
    page.goto(watch_url)
    expect(page.get_by_test_id("follow-bar")).to_contain_text("rerun on every save")
    expect(page.get_by_test_id("follow-path")).to_have_text(str(watched_file))
    expect(page.get_by_test_id("exhibit-tracing")).to_have_attribute("aria-current", "page")
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=RUN_TIMEOUT_MS
    )
    assert editor_text(page) == SIN
    wait_for_jaxpr(page, SIN)

    # Read-only while following: typing changes nothing, the example picker is off.
    page.get_by_test_id("editor").locator(".cm-content").click()
    page.keyboard.insert_text("zzz")
    page.keyboard.press("Enter")
    assert editor_text(page) == SIN
    expect(page.get_by_test_id("example-select")).to_be_disabled()

    # A save on disk: the new code in the editor, and its jaxpr.
    save(watched_file, COS)
    wait_for_jaxpr(page, COS)
    assert editor_text(page) == COS
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    page.screenshot(path=str(screenshots / "watch-following.png"), full_page=True)

    # Stop following: the editor is editable, and a later save is not applied.
    page.get_by_test_id("stop-following").click()
    expect(page.get_by_test_id("follow-bar")).to_contain_text(f"Stopped following {watched_file}")
    page.get_by_test_id("editor").locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text("# mine")
    assert editor_text(page) == COS + "# mine"
    save(watched_file, SIN)
    page.wait_for_timeout(2500)  # the watcher's debounce (0.4 s) and a run would be done
    assert editor_text(page) == COS + "# mine"
    assert shown_jaxpr(page) == jaxpr_of(COS)
    page.screenshot(path=str(screenshots / "watch-stopped.png"))
    assert console_errors == []


def test_follow_again_shows_a_deleted_file(page: Page, watched_file: Path, watch_url: str) -> None:
    page.goto(watch_url)
    expect(page.get_by_test_id("follow-path")).to_have_text(str(watched_file))
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        re.compile("run_finished"), timeout=RUN_TIMEOUT_MS
    )
    kept = editor_text(page)
    watched_file.unlink()
    expect(page.get_by_test_id("follow-problem")).to_contain_text(
        f"{watched_file} was deleted or renamed", timeout=10_000
    )
    assert editor_text(page) == kept
