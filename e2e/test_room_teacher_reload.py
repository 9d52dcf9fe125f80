"""Classroom mode (design 0044): a teacher who reloads the tab keeps the room. The page keeps the
room id and teacher token in the tab's sessionStorage and takes the room back on connecting,
within the server's grace period (and a following student's stepper buttons are off, with the
reason). Before, the token lived in page memory only: after a reload
the teacher had no room and the students waited "for the teacher's page" until the room ended."""

from __future__ import annotations

import jax
from jaxscope.sandbox.snippet import load_snippet
from playwright.sync_api import Browser, Page, expect

from e2e.browser import RUN_TIMEOUT_MS, open_exhibit, set_code

SOURCE = (
    "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.cos(x) * 3\n\nargs = (jnp.ones(2),)\n"
)


def test_a_teacher_reload_takes_the_room_back(
    page: Page, browser: Browser, console_errors: list[str]
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_exhibit(page, "tracing")
    page.get_by_test_id("room-start").click()
    room = page.get_by_test_id("room-id").inner_text()
    link = page.get_by_test_id("room-link").input_value()
    student = browser.new_page(viewport={"width": 1400, "height": 900})
    student.goto(link)
    expect(page.get_by_test_id("room-students")).to_have_text("1 student")

    page.reload()
    expect(page.get_by_test_id("room-id")).to_have_text(room)
    expect(page.get_by_test_id("room-students")).to_have_text("1 student")
    expect(student.get_by_test_id("room-following")).to_contain_text(f"Following room {room}")

    # The reloaded teacher still drives: its run reaches the student.
    set_code(page, SOURCE)
    page.get_by_test_id("run").click()
    expect(student.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=RUN_TIMEOUT_MS
    )
    # The student's stepper follows the teacher's: its buttons are off, and say why.
    first = student.get_by_test_id("stepper-first")
    expect(first).to_be_disabled()
    assert "teacher" in (first.get_attribute("title") or "")
    expect(student.get_by_test_id("stepper-play")).to_be_disabled()
    expect(page.get_by_test_id("stepper-first")).to_be_enabled()
    snippet = load_snippet(SOURCE)
    want = str(jax.make_jaxpr(snippet.f)(*snippet.args))
    fold = student.get_by_test_id("jaxpr-fold")
    if fold.count() and fold.is_checked():
        fold.uncheck()
    assert student.get_by_test_id("jaxpr-text").inner_text().strip() == want

    # Closing the room forgets it: another reload has no room.
    page.get_by_test_id("room-close").click()
    page.reload()
    expect(page.get_by_test_id("room-start")).to_be_visible()
    expect(page.get_by_test_id("room-id")).to_have_count(0)
    student.close()
