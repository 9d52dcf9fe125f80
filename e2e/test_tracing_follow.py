"""The editor follows the stepper in the tracing exhibit: stepping back through a finished run,
the eqn under the cursor selects its eqn row and its line, and the editor brings that line into
view (new-user review: the linked line stayed off screen)."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit

ADAM = Path(__file__).resolve().parents[1] / "exhibits" / "tracing" / "examples" / "adam_step.py"


def test_stepping_back_selects_the_eqn_and_reveals_its_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 800})
    open_exhibit(page, "tracing")
    page.get_by_test_id("example-select").select_option("adam_step")
    page.get_by_test_id("run").click()
    event_type = page.get_by_test_id("stepper-event-type")
    expect(event_type).to_have_text(re.compile("run_finished|run_failed"), timeout=120_000)
    expect(event_type).to_have_text("run_finished")
    page.get_by_test_id("stepper-prev").click()
    while event_type.inner_text() != "eqn_recorded":
        page.get_by_test_id("stepper-prev").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    # the line of the last eqn JAX recorded, read from the snippet: f's return statement block
    source = ADAM.read_text().splitlines()
    text = selected.inner_text().strip()
    assert any(text and text in line for line in source), text
    line_box = selected.bounding_box()
    editor = page.get_by_test_id("editor").bounding_box()
    assert line_box is not None and editor is not None
    assert editor["y"] <= line_box["y"] and line_box["y"] + line_box["height"] <= (
        editor["y"] + editor["height"]
    ), (line_box, editor)
    page.screenshot(path=str(screenshots / "tracing-follow.png"))
    assert console_errors == []
