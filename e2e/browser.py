"""Browser helpers shared by the e2e tests: open an exhibit, replace the editor's text, run
and wait for the terminal event, read the editor back, switch the theme and take a screenshot in
each theme."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from exhibits.registry import EXHIBITS

RUN_TIMEOUT_MS = 60_000  # a worker start and a compile beside a second test process


def open_exhibit(page: Page, exhibit: str) -> None:
    """Open the explorer on ``exhibit`` once its catalogue and example have loaded."""
    page.goto("/")
    page.get_by_test_id(f"exhibit-{exhibit}").click()
    expect(page.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS[exhibit].title)
    # The default example arrives with the catalogue; typing before that would be overwritten.
    expect(page.get_by_test_id("editor").locator(".cm-line").nth(3)).to_be_attached()


def set_code(page: Page, code: str) -> None:
    """Replace the editor's text exactly (insert_text bypasses auto-indent)."""
    content = page.get_by_test_id("editor").locator(".cm-content")
    content.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)
    page.keyboard.press("Escape")


def editor_text(page: Page) -> str:
    # An empty line renders as <br>, whose inner text is a newline of its own.
    lines = page.get_by_test_id("editor").locator(".cm-line").all_inner_texts()
    return "\n".join(line.rstrip("\n") for line in lines)


def run_and_wait(page: Page) -> None:
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        re.compile(r"run_finished|run_failed"), timeout=RUN_TIMEOUT_MS
    )


def run_real(page: Page, exhibit: str, code: str, timeout: float = 120_000) -> None:
    """Open ``exhibit`` in a 1400 x 1000 page, paste ``code``, run it and wait (``timeout`` ms)
    for ``run_finished``: the start of every real-program test (examples/real)."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_exhibit(page, exhibit)
    set_code(page, code)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=timeout)


THEMES = ("light", "dark")


def set_theme(page: Page, theme: str) -> None:
    """Switch the page to ``theme`` ("light" or "dark") with its own toggle, unless it is there
    already, and wait until ``<html data-theme>`` says so."""
    html = page.locator("html")
    if html.get_attribute("data-theme") != theme:
        page.get_by_test_id("theme-toggle").click()
    expect(html).to_have_attribute("data-theme", theme)


def in_both_themes(page: Page, shoot: Callable[[str], object]) -> None:
    """Call ``shoot(theme)`` (its result unused) with the page as it stands in the light theme,
    then in the dark one, and switch back to light: a scenario runs once (in light) and still has
    its screenshots (and any assertion on the theme's colours) in both themes."""
    for theme in THEMES:
        set_theme(page, theme)
        shoot(theme)
    set_theme(page, "light")


def shoot_both_themes(page: Page, screenshots: Path, name: str, *, full_page: bool = False) -> None:
    """Screenshot the page in the light theme as ``{name}-light.png`` and in the dark one as
    ``{name}-dark.png``, then switch back to light (:func:`in_both_themes`)."""
    in_both_themes(
        page,
        lambda theme: page.screenshot(
            path=str(screenshots / f"{name}-{theme}.png"), full_page=full_page
        ),
    )
