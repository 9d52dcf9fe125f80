"""End to end: a run that finds every sandbox worker busy waits in the queue, the page shows its
place, Cancel leaves the queue, and a queued run runs once a worker frees (issue 12).

A server of its own with one worker (``--max-workers 1``) and two pages: the first holds the
worker with a sleeping snippet, the second's run queues behind it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from jaxscope.local_server import serving
from playwright.sync_api import Browser, Page, expect

from e2e.browser import RUN_TIMEOUT_MS, open_exhibit, set_code

ROOT = Path(__file__).resolve().parent.parent
SLEEPER = (
    "import time\nimport jax.numpy as jnp\ntime.sleep(6)\ndef f(x):\n    return x\nargs = (1.0,)\n"
)
SIN = "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x)\nargs = (1.0,)\n"


@pytest.fixture(scope="module")
def one_worker_url() -> Iterator[str]:
    with serving("--max-workers", "1", "--workers", "1", cwd=ROOT) as server:
        yield server.url


def _page(browser: Browser, url: str) -> Page:
    page = browser.new_page(base_url=url, viewport={"width": 1400, "height": 900})
    open_exhibit(page, "tracing")
    return page


def test_a_run_queues_behind_a_busy_worker_and_cancel_leaves_the_queue(
    browser: Browser, one_worker_url: str, screenshots: Path
) -> None:
    holder, waiter = _page(browser, one_worker_url), _page(browser, one_worker_url)
    try:
        set_code(holder, SLEEPER)
        holder.get_by_test_id("run").click()
        expect(holder.get_by_test_id("queue-status")).to_have_count(0)
        # The holder's run is on the only worker (its snippet sleeps in the load stage).
        holder.wait_for_timeout(1500)
        set_code(waiter, SIN)
        waiter.get_by_test_id("run").click()
        status = waiter.get_by_test_id("queue-status")
        expect(status).to_contain_text("Waiting for a sandbox worker", timeout=10_000)
        expect(status).to_contain_text(re.compile(r"position 1\b"))
        waiter.screenshot(path=str(screenshots / "queue-waiting.png"))
        # Cancel leaves the queue at once: the run ends cancelled, the holder's run goes on.
        waiter.get_by_test_id("cancel").click()
        expect(waiter.get_by_test_id("error-kind")).to_have_attribute(
            "data-kind", "cancelled", timeout=5_000
        )
        expect(status).to_have_count(0)
        # Queued again, the run starts when the holder's worker is done, and finishes.
        waiter.get_by_test_id("run").click()
        expect(status).to_be_visible(timeout=10_000)
        expect(waiter.get_by_test_id("stepper-event-type")).to_have_text(
            "run_finished", timeout=RUN_TIMEOUT_MS
        )
        expect(holder.get_by_test_id("stepper-event-type")).to_have_text(
            "run_finished", timeout=RUN_TIMEOUT_MS
        )
        expect(status).to_have_count(0)
    finally:
        holder.close()
        waiter.close()
