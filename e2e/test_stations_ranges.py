"""The stations exhibit on a program of thousands of eqns (a loop unrolled to 4,001 eqns; 2,401
in `make test`): its StableHLO and op links come in list ranges (design 0045, "The stations'
texts"). While they come, a note over the text says how much of it the page has, as the wire
counts it; once the ranges are merged the note goes, the text shown is the whole one sent (head
and ranges, in order) and the op links of its last lines are clickable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jaxscope.server.frames import frame_objects
from playwright.sync_api import Page, expect

from e2e.browser import run_real

CODE = """
import jax.numpy as jnp
import numpy as np


def f(x):
    for _ in range(ITERATIONS):
        x = jnp.sin(x) * 0.5 + x * 0.999
    return jnp.sum(x)


x = np.linspace(0.1, 2.0, 32, dtype=np.float32).reshape(4, 8)
args = (x,)
"""


# `make test` runs the loop at 600 iterations (2,401 eqns: its StableHLO still past the event
# bound, so it comes in ranges); `make test-all` at 1,000 too.
@pytest.mark.parametrize(
    "iterations", [600, pytest.param(1_000, marks=pytest.mark.full)], ids=["2401", "4001"]
)
def test_a_4001_eqn_loops_stablehlo_loads_in_ranges_and_shows_whole(
    page: Page, console_errors: list[str], screenshots: Path, iterations: int
) -> None:
    lowered: list[dict[str, Any]] = []  # module_lowered as sent
    sent: list[dict[str, Any]] = []  # its items_sent answers
    page.add_init_script(
        """window.__notes = [];
        new MutationObserver(() => {
          const el = document.querySelector('[data-testid="lowered-loading"]');
          const t = el ? el.textContent.trim() : null;
          if (t && window.__notes[window.__notes.length - 1] !== t) window.__notes.push(t);
        }).observe(document, { childList: true, subtree: true, characterData: true });"""
    )

    def on_socket(ws: Any) -> None:
        def on_frame(payload: str | bytes) -> None:
            if not isinstance(payload, str):
                return
            for event in frame_objects(payload):  # one event, or an array of them
                if event["type"] == "module_lowered":
                    lowered.append(event)
                elif event["type"] == "items_sent":
                    sent.append(event)

        ws.on("framereceived", on_frame)

    page.on("websocket", on_socket)
    run_real(page, "stations", CODE.replace("ITERATIONS", f"{iterations:_}"), timeout=240_000)
    expect(page.get_by_test_id("lowered-loading")).to_have_count(0, timeout=60_000)
    [event] = lowered
    ranges = [r for r in event["list_ranges"] if r["field"] == "stablehlo"]
    assert ranges  # the StableHLO came in ranges
    total = ranges[-1]["stop"]
    head = len(event["stablehlo"])
    notes: list[str] = page.evaluate("window.__notes")
    assert notes[0] == f"loading the rest of the StableHLO: {head:,} of {total:,} characters"
    assert len(notes) == len(ranges)  # one count per range merged before the last
    chunks = sorted((a for a in sent if a["path"] == "stablehlo"), key=lambda a: a["start"])
    assert [a["detail_of"] for a in chunks] == [r["detail_id"] for r in ranges]
    whole = event["stablehlo"] + "".join(a["items"][0] for a in chunks)
    assert len(whole) == total
    lines = whole.split("\n")
    box = page.get_by_test_id("stablehlo-text")
    box.get_by_role("button", name="show the other").click()
    expect(box.locator(".row")).to_have_count(len(lines), timeout=30_000)
    last = box.locator(f'[data-line="{len(lines) - 2}"] .src')
    expect(last).to_have_text(lines[-2])
    # the op links past the head arrived too: the last one's line is clickable
    links = [*event["op_links"], *(i for a in sent if a["path"] == "op_links" for i in a["items"])]
    last_op = max(link["line"] for link in links)
    assert last_op > event["stablehlo"].count("\n")  # a line that was not in the head
    op = page.get_by_test_id(f"op-line-{last_op}")
    op.scroll_into_view_if_needed()
    expect(op).to_have_attribute("role", "button")
    page.screenshot(path=str(screenshots / "stations-ranges-whole.png"))
    assert console_errors == []
