"""The shell's layout and keyboard in real Chromium (issue 18 item 9): the exhibit tabs keep
their boxes whichever is active; the columns and the editor's height are resizable by their
splitters and survive a reload; an error panel does not shrink the editor; ←/→ and Home/End
step through the run when focus is not in the editor. Screenshots of each."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from e2e.browser import open_exhibit
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
