"""Classroom mode (design 0044) with "Compare with previous run" (design 0043) on a student's
page: the student's previous and current runs are the teacher's, with the teacher's code. Before,
a student's page archived every relayed run with the empty code (it starts no run itself), so the
compare view said "previous run (the same code)" and its snippet tab compared nothing, whatever
the teacher had changed."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from e2e.browser import RUN_TIMEOUT_MS, open_exhibit, set_code

A = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) * 2\n\nargs = (jnp.ones(3),)\n"
B = A.replace("jnp.sin(x)", "jnp.cos(x)")


def test_a_students_compare_holds_the_teachers_code(
    page: Page, browser: Browser, console_errors: list[str]
) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_exhibit(page, "tracing")
    page.get_by_test_id("room-start").click()
    link = page.get_by_test_id("room-link").input_value()
    student = browser.new_page(viewport={"width": 1400, "height": 900})
    student.goto(link)
    expect(page.get_by_test_id("room-students")).to_have_text("1 student")
    for code in (A, B):
        set_code(page, code)
        page.get_by_test_id("run").click()
        expect(page.get_by_test_id("stepper-event-type")).to_have_text(
            "run_finished", timeout=RUN_TIMEOUT_MS
        )
        expect(student.get_by_test_id("stepper-event-type")).to_have_text(
            "run_finished", timeout=RUN_TIMEOUT_MS
        )
        expect(student.get_by_test_id("stepper-position")).to_have_text(
            page.get_by_test_id("stepper-position").inner_text()
        )

    student.get_by_test_id("compare-open").click()
    student.get_by_test_id("compare-tab-snippet").click()
    student.get_by_test_id("compare-mode-text").check()
    table = student.get_by_test_id("compare-table")
    expect(table).to_be_visible()
    assert "the same code" not in table.inner_text()
    changed = student.locator('[data-testid="compare-row"][data-kind="changed"]')
    expect(changed).to_have_count(1)
    cells = changed.locator("td.text").all_inner_texts()
    assert cells[0].strip() == "return jnp.sin(x) * 2"
    assert cells[1].strip() == "return jnp.cos(x) * 2"
    student.close()
