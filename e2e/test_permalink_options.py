"""A page opened from a shared link shows the options that will run before it runs (issue 31,
item 1: the sharding exhibit's form showed the snippet's own spec until Run, whatever the link
carried). The link is made as a user makes one: a spec applied in the form, then Copy link."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit
from exhibits.registry import EXHIBITS

SPEC = "P(None, 'x')"


def test_a_link_shows_its_options_before_it_runs(page: Page, console_errors: list[str]) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "sharding")
    page.get_by_test_id("example-select").select_option("sum_sharded_axis")
    page.get_by_test_id("sharding-array-shape").fill("4, 8")
    page.get_by_test_id("sharding-spec").fill(SPEC)
    page.get_by_test_id("sharding-apply").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        re.compile(r"run_finished|run_failed"), timeout=60_000
    )
    page.get_by_test_id("copy-link").click()

    other = page.context.new_page()
    other.set_viewport_size({"width": 1500, "height": 1100})
    other.goto(page.url)
    expect(other.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["sharding"].title)
    expect(other.get_by_test_id("link-notice")).to_be_visible()
    expect(other.get_by_test_id("stepper-position")).to_contain_text("no events")
    # Before Run: the form holds the link's spec and array shape, not the snippet's own ...
    expect(other.get_by_test_id("sharding-spec")).to_have_value(SPEC)
    expect(other.get_by_test_id("sharding-array-shape")).to_have_value("4, 8")
    expect(other.get_by_test_id("sharding-mesh-shape")).to_have_value("2, 4")
    # ... and the notice lists every option the link carries for this exhibit.
    expect(other.get_by_test_id("link-option-spec")).to_have_text(f"spec = {SPEC}")
    expect(other.get_by_test_id("link-option-array_shape")).to_have_text("array_shape = (4, 8)")
    expect(other.get_by_test_id("link-option-mesh")).to_contain_text("mesh = jax.make_mesh((2, 4)")
    other.get_by_test_id("run").click()
    expect(other.get_by_test_id("stepper-event-type")).to_have_text(
        re.compile(r"run_finished|run_failed"), timeout=60_000
    )
    expect(other.get_by_test_id("link-notice")).to_have_count(0)
    expect(other.get_by_test_id("sharding-spec")).to_have_value(SPEC)
    assert console_errors == []
