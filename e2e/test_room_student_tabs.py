"""Classroom mode (design 0044): a following student's exhibit tabs, and the compact menu below
1100 px, do not take the page off the teacher's exhibit. Before, a student's tab click switched
its page to another exhibit (and that exhibit's default example) while the room bar still said
it followed the teacher."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from e2e.browser import editor_text, open_exhibit
from exhibits.registry import EXHIBITS


def test_a_following_students_tabs_keep_the_teachers_exhibit(
    page: Page, browser: Browser, console_errors: list[str]
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_exhibit(page, "tracing")
    page.get_by_test_id("room-start").click()
    link = page.get_by_test_id("room-link").input_value()
    teacher_code = editor_text(page)

    student = browser.new_page(viewport={"width": 1400, "height": 900})
    student.goto(link)
    expect(student.get_by_test_id("room-following")).to_be_visible()
    expect(student.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["tracing"].title)
    expect(page.get_by_test_id("room-students")).to_have_text("1 student")

    student.get_by_test_id("exhibit-jvp").click()
    # The teacher's next drive would pull the page back: wait for nothing, check at once.
    expect(student.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["tracing"].title)
    expect(student.get_by_test_id("exhibit-tracing")).to_have_attribute("aria-current", "page")
    assert editor_text(student).strip() == teacher_code.strip()

    # The teacher switches: the student follows.
    page.get_by_test_id("exhibit-jvp").click()
    expect(student.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["jvp"].title)

    # After leaving, the tabs are the student's own again.
    student.get_by_test_id("room-leave").click()
    student.get_by_test_id("exhibit-stations").click()
    expect(student.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["stations"].title)
    expect(page.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["jvp"].title)
    student.close()
