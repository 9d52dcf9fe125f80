"""The exhibit navigation of a narrow window (issue 18 item 9): below 1100 px each group of
exhibits is a menu, so the header stays one or two rows (it took 237 px at 1024 px with every
tab shown); every exhibit is reachable by mouse and by keyboard; the group buttons keep their
boxes whichever exhibit is active. Screenshots at 1024 and 800 px, a menu open."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Locator, Page, expect

from exhibits.registry import EXHIBITS


def box(locator: Locator) -> tuple[float, float, float, float]:
    b = locator.bounding_box()
    assert b is not None
    return (round(b["x"], 1), round(b["y"], 1), round(b["width"], 1), round(b["height"], 1))


def group_buttons(page: Page) -> Locator:
    return page.get_by_test_id("exhibit-menus").locator("button[data-group-button]")


@pytest.mark.parametrize("width", [1024, 800])
def test_a_narrow_header_is_one_row_of_group_menus(
    page: Page, console_errors: list[str], screenshots: Path, width: int
) -> None:
    # The exhibits of the wide navigation (every registered one: test_shell_layout.py)...
    page.set_viewport_size({"width": 1400, "height": 800})
    page.goto("/")
    tabs = page.locator("nav.exhibits button[data-testid^='exhibit-']")
    expect(tabs.first).to_be_visible()
    wide = sorted(
        t.removeprefix("exhibit-") for t in tabs.evaluate_all("bs => bs.map(b => b.dataset.testid)")
    )
    assert set(wide) <= set(EXHIBITS) and len(wide) >= 29
    # ... are all in the narrow window's menus.
    page.set_viewport_size({"width": width, "height": 800})
    expect(page.get_by_test_id("exhibit-menus")).to_be_visible()
    header = page.locator("header.topbar")
    height = box(header)[3]
    assert height <= 80, height  # was 237 px at 1024 px with every group's tabs
    buttons = group_buttons(page)
    first = [box(buttons.nth(i)) for i in range(buttons.count())]
    assert all(y + h <= box(header)[3] for _, y, _, h in first)

    # Every exhibit is in its group's menu; choosing one moves no group button.
    seen: list[str] = []
    for i in range(buttons.count()):
        buttons.nth(i).click()
        menu = page.locator("[data-menu]")
        expect(menu).to_have_count(1)
        ids = [
            (t or "").removeprefix("exhibit-")
            for t in menu.locator("button").evaluate_all("bs => bs.map(b => b.dataset.testid)")
        ]
        seen += ids
        menu.get_by_test_id(f"exhibit-{ids[-1]}").click()
        expect(page.locator("[data-menu]")).to_have_count(0)
        expect(page.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS[ids[-1]].title)
        assert [box(buttons.nth(j)) for j in range(buttons.count())] == first
        assert buttons.nth(i).get_attribute("class") is not None
        assert "current" in (buttons.nth(i).get_attribute("class") or "")
    assert sorted(seen) == wide

    buttons.nth(1).click()
    page.screenshot(path=str(screenshots / f"nav-compact-{width}.png"))
    page.keyboard.press("Escape")
    expect(page.locator("[data-menu]")).to_have_count(0)
    assert console_errors == []


def test_the_group_menus_work_from_the_keyboard(page: Page, console_errors: list[str]) -> None:
    page.set_viewport_size({"width": 1024, "height": 800})
    page.goto("/")
    expect(page.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["tracing"].title)
    buttons = group_buttons(page)
    autodiff = page.get_by_test_id("exhibit-group-Autodiff")
    autodiff.focus()
    page.keyboard.press("Enter")
    expect(autodiff).to_have_attribute("aria-expanded", "true")
    menu = page.locator("[data-menu]")
    items = menu.locator("button")
    expect(items.first).to_be_focused()  # no exhibit of this group is active: the first
    page.keyboard.press("ArrowDown")
    expect(items.nth(1)).to_be_focused()
    page.keyboard.press("End")
    expect(items.last).to_be_focused()
    page.keyboard.press("ArrowDown")  # wraps
    expect(items.first).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_have_count(0)
    expect(autodiff).to_be_focused()
    # ↓ opens the menu too; Enter on an item chooses it, and the stepper keys stay off.
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    chosen = page.evaluate("document.activeElement.dataset.testid").removeprefix("exhibit-")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS[chosen].title)
    expect(menu).to_have_count(0)
    # Reopened, the menu starts on the exhibit on screen; a click outside closes it.
    autodiff.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id(f"exhibit-{chosen}")).to_be_focused()
    expect(page.get_by_test_id(f"exhibit-{chosen}")).to_have_attribute("aria-current", "page")
    page.get_by_test_id("exhibit-title").click()
    expect(menu).to_have_count(0)
    assert buttons.count() >= 8
    assert console_errors == []
