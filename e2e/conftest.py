"""Fixtures for the end-to-end tests: a real `jaxscope serve` and Debian's Chromium.

The server runs as a subprocess on a free port with the built frontend (``make test`` builds it
first). Playwright cannot download its own browsers here, so the launch arguments point it at
``/usr/bin/chromium`` (see ``../shared/reference/toolchain.md``, pitfalls 1-3, 12).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jaxscope.local_server import serving
from playwright.sync_api import ConsoleMessage, Page, expect

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"

# A check waits up to 15 s (Playwright's default is 5 s): `make test` runs two test processes
# on 2 cores, and a rerun may wait for a fresh sandbox worker (docs/design/0049-test-time.md).
expect.set_options(timeout=15_000)

CHROMIUM_ARGS = [
    "--headless=new",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """A `jaxscope serve` on a free loopback port, torn down after the session."""
    if not (ROOT / "frontend" / "dist" / "index.html").exists():
        pytest.fail("frontend/dist is missing: run `npm run build` (make test does)")
    with serving(cwd=ROOT) as server:
        yield server.url


@pytest.fixture(scope="session")
def base_url(server_url: str) -> str:
    """pytest-playwright's base URL, so tests can `page.goto("/")`."""
    return server_url


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch Debian's Chromium instead of a Playwright-downloaded browser."""
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    return {**browser_type_launch_args, "executable_path": exe, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Where e2e tests save the screenshots that we look at."""
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def console_errors(page: Page) -> Iterator[list[str]]:
    """Collects console errors and uncaught page errors; each test asserts it stays empty."""
    errors: list[str] = []

    def on_console(msg: ConsoleMessage) -> None:
        if msg.type == "error":
            errors.append(msg.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    yield errors
