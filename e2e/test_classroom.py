"""Classroom mode in real Chromium (issue 18 item 8, design 0044): a teacher's page starts a
room; a student's page opened from the room's link follows the teacher's exhibit, code, run
(the jaxpr is ``jax.make_jaxpr``'s, relayed from the teacher's run) and stepper, read-only,
until "Leave and explore on my own" gives it the editor back with the code kept. A mistyped
room link says so. Screenshots of both pages."""

from __future__ import annotations

import re
from pathlib import Path

import jax
from jaxscope.sandbox.snippet import load_snippet
from playwright.sync_api import Browser, Page, expect

from e2e.browser import RUN_TIMEOUT_MS, editor_text, open_exhibit, run_and_wait, set_code

SOURCE = (
    "import jax.numpy as jnp\n\ndef f(x, y):\n    z = jnp.sin(x) * y\n"
    "    return jnp.sum(z + 1.0)\n\nargs = (jnp.ones(3), 2.0)\n"
)


def jaxpr_of(source: str) -> str:
    snippet = load_snippet(source)
    return str(jax.make_jaxpr(snippet.f)(*snippet.args))


def jaxpr_text(page: Page) -> str:
    fold = page.get_by_test_id("jaxpr-fold")
    if fold.count() and fold.is_checked():
        fold.uncheck()
    return page.get_by_test_id("jaxpr-text").inner_text()


def test_a_student_follows_the_teachers_run_and_stepper(
    page: Page, browser: Browser, base_url: str, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_exhibit(page, "tracing")
    page.get_by_test_id("room-start").click()
    link = page.get_by_test_id("room-link").input_value()
    room = page.get_by_test_id("room-id").inner_text()
    assert re.fullmatch(r"[A-Za-z0-9_-]{16}", room), room
    assert link == f"{base_url.rstrip('/')}/?room={room}"

    student = browser.new_page(viewport={"width": 1400, "height": 900})
    student_errors: list[str] = []
    student.on("pageerror", lambda exc: student_errors.append(str(exc)))
    student.goto(link)
    expect(student.get_by_test_id("room-following")).to_contain_text(f"Following room {room}")
    expect(page.get_by_test_id("room-students")).to_have_text("1 student")

    # The teacher types and runs; the student's page shows the same code, run and jaxpr.
    set_code(page, SOURCE)
    run_and_wait(page)
    expect(student.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=RUN_TIMEOUT_MS
    )
    assert editor_text(student).strip() == SOURCE.strip()
    assert jaxpr_text(student).strip() == jaxpr_of(SOURCE) == jaxpr_text(page).strip()
    position = page.get_by_test_id("stepper-position").inner_text()
    expect(student.get_by_test_id("stepper-position")).to_have_text(position)

    # The teacher steps back to the first event, then two on: the student's stepper follows.
    page.get_by_test_id("stepper-first").click()
    page.get_by_test_id("stepper-next").click()
    page.get_by_test_id("stepper-next").click()
    teacher_at = page.get_by_test_id("stepper-position").inner_text()
    assert teacher_at.startswith("event 3 of ")
    expect(student.get_by_test_id("stepper-position")).to_have_text(teacher_at)
    expect(student.get_by_test_id("stepper-event-type")).to_have_text(
        page.get_by_test_id("stepper-event-type").inner_text()
    )

    # The student's editor is read-only, and its Run is off while following.
    expect(student.get_by_test_id("run")).to_be_disabled()
    student.get_by_test_id("editor").locator(".cm-content").click()
    student.keyboard.insert_text("# mine\n")
    assert editor_text(student).strip() == SOURCE.strip()
    page.screenshot(path=str(screenshots / "classroom-teacher.png"))
    student.screenshot(path=str(screenshots / "classroom-student.png"))

    # The teacher moves to another exhibit: the student goes along.
    page.get_by_test_id("exhibit-jvp").click()
    expect(student.get_by_test_id("exhibit-jvp")).to_have_attribute("aria-current", "page")
    page.get_by_test_id("exhibit-tracing").click()
    expect(student.get_by_test_id("exhibit-tracing")).to_have_attribute("aria-current", "page")

    # Leaving keeps the code, editable, and the student's own runs are its own.
    student.get_by_test_id("room-leave").click()
    expect(student.get_by_test_id("room-bar")).to_have_count(0)
    assert "room=" not in student.url
    expect(page.get_by_test_id("room-students")).to_have_text("0 students")
    assert editor_text(student).strip() == SOURCE.strip()
    expect(student.get_by_test_id("run")).to_be_enabled()
    set_code(student, SOURCE.replace("jnp.sin(x)", "jnp.cos(x)"))
    run_and_wait(student)
    assert jaxpr_text(student).strip() == jaxpr_of(SOURCE.replace("jnp.sin(x)", "jnp.cos(x)"))
    # ... and do not reach the teacher, whose page still shows its own run where it was.
    expect(page.get_by_test_id("stepper-position")).to_have_text(teacher_at)

    # The teacher closes the room; a student opening its link now is told it has ended.
    page.get_by_test_id("room-close").click()
    expect(page.get_by_test_id("room-start")).to_be_visible()
    student.goto(link)
    expect(student.get_by_test_id("room-message")).to_contain_text("no such room")
    student.screenshot(path=str(screenshots / "classroom-ended.png"))
    expect(student.get_by_test_id("room-following")).to_have_count(0)
    student.close()
    assert console_errors == [] and student_errors == []
