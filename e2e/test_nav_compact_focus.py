"""The compact exhibit nav (below 1100 px, components/ExhibitMenu.svelte) at 800 px, keyboard
only: choosing an exhibit with Enter leaves focus on the group's button (before, the chosen item
was removed with its menu and focus fell to the page's body, so a keyboard user started over
from the top), and Tab in an open menu closes it and goes on to the next group's button (before,
Tab walked through the menu's items and left the menu open)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from exhibits.registry import EXHIBITS


def test_choosing_and_tabbing_keep_the_focus_in_the_nav(
    page: Page, console_errors: list[str]
) -> None:
    page.set_viewport_size({"width": 800, "height": 700})
    page.goto("/")
    expect(page.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["tracing"].title)
    groups = page.get_by_test_id("exhibit-menus").locator("[data-group-button]")
    first = groups.nth(0)
    page.keyboard.press("Tab")
    expect(first).to_be_focused()

    page.keyboard.press("Enter")
    menu = page.locator("[data-menu]")
    page.keyboard.press("ArrowDown")
    chosen = page.evaluate("document.activeElement.dataset.testid").removeprefix("exhibit-")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS[chosen].title)
    expect(menu).to_have_count(0)
    expect(first).to_be_focused()

    page.keyboard.press("Enter")
    expect(menu).to_have_count(1)
    expect(page.get_by_test_id(f"exhibit-{chosen}")).to_be_focused()
    page.keyboard.press("Tab")
    expect(menu).to_have_count(0)
    expect(groups.nth(1)).to_be_focused()
    assert console_errors == []
