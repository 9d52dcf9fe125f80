"""Classroom items of issue 32's break-it review in real Chromium (design 0065): a student's own
draft survives following a room (the teacher's code is shown, never saved over the draft), and
an exhibit id from localStorage that is one of ``Object.prototype``'s names (``toString``,
``constructor``, ``__proto__``) no longer blanks the page."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from e2e.browser import editor_text, open_exhibit, set_code

DRAFT = "# my own draft\nimport jax.numpy as jnp\ndef f(x):\n    return x\nargs = (1.0,)\n"
TEACHER = "import jax.numpy as jnp\ndef f(x):\n    return jnp.cos(x)\nargs = (2.0,)\n"


def test_a_students_draft_survives_following_a_room(
    page: Page, browser: Browser, base_url: str, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "tracing")
    page.get_by_test_id("room-start").click()
    link = page.get_by_test_id("room-link").input_value()
    set_code(page, TEACHER)

    student = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    student.on("pageerror", lambda exc: errors.append(str(exc)))
    student.goto(base_url)
    set_code(student, DRAFT)
    student.wait_for_timeout(500)  # the draft's debounced save
    student.goto(link)
    expect(student.get_by_test_id("room-following")).to_be_visible()
    expect(student.get_by_test_id("editor")).to_contain_text("jnp.cos(x)")
    student.wait_for_timeout(500)
    # The student's own page again (no room): its draft, not the teacher's code.
    student.goto(base_url)
    expect(student.get_by_test_id("editor")).to_contain_text("my own draft")
    assert editor_text(student).strip() == DRAFT.strip()
    student.close()
    assert errors == [] and console_errors == []


def test_prototype_names_as_the_last_exhibit_do_not_blank_the_page(
    page: Page, base_url: str, console_errors: list[str], screenshots: Path
) -> None:
    page.goto(base_url)
    for name in ("toString", "constructor", "__proto__"):
        page.evaluate("name => localStorage.setItem('jaxscope:exhibit', name)", name)
        page.reload()
        expect(page.get_by_test_id("run")).to_be_visible()
        expect(page.locator("[aria-current='page']").first).to_be_visible()
    page.screenshot(path=str(screenshots / "room-prototype-names.png"))
    assert console_errors == []
