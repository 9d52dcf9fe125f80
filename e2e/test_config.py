"""The config exhibit in real Chromium: the table shows every jax.config option with JAX's values,
search and the tracing-context filter narrow it, sorting reorders it, and the retrace experiment
shows which flips retraced. Screenshots in light and dark themes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jax
from jax._src import config as jax_config
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_theme, shoot_both_themes

CONFIG: Any = jax.config


def test_config_table_shows_and_filters(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "config")
    set_theme(page, "light")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    rows = page.get_by_test_id("config-row")
    expect(rows).to_have_count(len(CONFIG.values))
    # by default the experiment shows the first flip that retraced: x64, its jaxpr in f64
    expect(page.get_by_test_id("retrace-jax_enable_x64")).to_have_class(re.compile(r"\bpicked\b"))
    expect(page.get_by_test_id("jaxpr-text")).to_contain_text("f64[3]")
    # help: RST ``literals`` render as code, and every help cell wraps inside its column
    guard = page.locator("[data-testid=config-row][data-name=jax_array_garbage_collection_guard]")
    help_cell = guard.get_by_test_id("config-help")
    expect(help_cell.locator("code").first).to_have_text("jax.Array")
    assert "``" not in help_cell.inner_text()
    overflowing = page.eval_on_selector_all(
        "[data-testid=config-help]",
        "cells => cells.filter(c => c.scrollWidth > c.clientWidth + 1)"
        ".map(c => c.textContent.slice(0, 40))",
    )
    assert overflowing == []
    table_box = page.get_by_test_id("config-table").bounding_box()
    scroll_box = page.locator(".scroll").bounding_box()
    assert table_box is not None and scroll_box is not None
    assert table_box["width"] <= scroll_box["width"] + 1  # no column cut off on the right

    page.get_by_test_id("config-search").fill("x64")
    names = page.get_by_test_id("config-name").all_inner_texts()
    assert "jax_enable_x64" in names
    x64 = page.locator("[data-testid=config-row][data-name=jax_enable_x64]")
    expect(x64.get_by_test_id("config-value")).to_have_text(repr(CONFIG.jax_enable_x64))
    expect(x64.get_by_test_id("config-trace")).to_have_text("retraces")
    expect(x64.get_by_test_id("config-scoped")).to_have_text("with …")

    page.get_by_test_id("config-search").fill("")
    page.get_by_test_id("only-trace-context").check()
    traced = set(jax_config.trace_context_names()) & set(CONFIG.values)
    expect(rows).to_have_count(len(traced))
    assert set(page.get_by_test_id("config-name").all_inner_texts()) == traced
    page.get_by_test_id("only-trace-context").uncheck()

    page.get_by_test_id("sort-name").click()  # already by name: now descending
    first = page.get_by_test_id("config-name").first.inner_text()
    assert first == sorted(CONFIG.values)[-1]

    expect(page.get_by_test_id("retrace-jax_enable_x64").get_by_test_id("retraced")).to_have_text(
        "retraced"
    )
    expect(page.get_by_test_id("retrace-jax_debug_nans").get_by_test_id("retraced")).to_have_text(
        "cache hit"
    )
    page.get_by_test_id("retrace-jax_enable_x64").locator("button").click()
    expect(page.get_by_test_id("jaxpr-text")).to_contain_text("f64[3]")
    shoot_both_themes(page, screenshots, "config")
    assert console_errors == []
