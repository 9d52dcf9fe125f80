"""The pmap exhibit in real Chromium: the default example's three layers read from the jaxpr,
every device's row against numpy (the column sums of ``arange(n * 3).reshape(n, 3)`` on every
device after ``psum``), and the collectives' cards. Screenshots in the light and dark themes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_theme, shoot_both_themes
from exhibits.registry import EXHIBITS

EXAMPLE = EXHIBITS["pmap"].example_paths()[EXHIBITS["pmap"].default_example]


def test_pmap_shows_each_device(page: Page, console_errors: list[str], screenshots: Path) -> None:
    ns: dict[str, Any] = {"__name__": "example"}
    exec(compile(EXAMPLE.read_text(), str(EXAMPLE), "exec"), ns)
    x = ns["args"][0]
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "pmap")
    set_theme(page, "light")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("pmap-layer-list").locator("li")).to_have_count(3)
    # the worker's 8 devices, each with its row; psum's column sums on every one
    sums = ", ".join(str(int(v)) for v in np.asarray(x).sum(0))
    for d in range(8):
        row = page.get_by_test_id(f"pmap-device-{d}")
        expect(row).to_contain_text(f"(row {d})")
        expect(row).to_contain_text(f"[{sums}]")
    expect(page.get_by_test_id("pmap-collective-2")).to_contain_text("all_gather")
    shoot_both_themes(page, screenshots, "pmap", full_page=True)
    assert console_errors == []
