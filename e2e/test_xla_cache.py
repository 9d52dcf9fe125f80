"""The xla_cache exhibit (PyTorch/XLA track) in real Chromium: the default loop runs in a torch
worker; the steps table shows step 0 compiled and steps 1-3 cache hits under one graph hash;
the varying_batch example shows the RecompileEveryStep finding at its batches line and the new
shape's HLO lines, python_scalar the finding at its pow line and step 3's constant, seed_float
the five compiles inside step 0 with their cuts (issue 33).
Screenshots in the light and dark themes. Skipped where the torch venv is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxscope.sandbox.kinds import kind_problem
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, set_theme, shoot_both_themes

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# A fresh torch worker imports torch and torch_xla (5-15 s on a loaded 2-core box) before f runs.
TORCH_RUN_TIMEOUT_MS = 120_000


def run(page: Page) -> None:
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )


def test_xla_cache_compiles_once_then_finds_a_recompiling_loop(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "xla_cache")
    set_theme(page, "light")
    run(page)
    steps = page.get_by_test_id("xla-step")
    expect(steps).to_have_count(4)
    expect(page.get_by_test_id("xla-compiled")).to_have_count(1)
    expect(steps.nth(0)).to_contain_text("compiled")
    for i in (1, 2, 3):
        expect(steps.nth(i)).to_contain_text("cache hit")
    expect(page.get_by_test_id("xla-summary")).to_have_text(
        "4 steps, 1 graph: 1 compiled, 3 cache hits"
    )
    expect(page.get_by_test_id("xla-finding")).to_have_count(0)
    shoot_both_themes(page, screenshots, "xla_cache-loop", full_page=True)

    page.get_by_test_id("example-select").select_option("varying_batch")
    run(page)
    expect(page.get_by_test_id("xla-compiled")).to_have_count(4)
    finding = page.get_by_test_id("xla-finding")
    expect(finding).to_contain_text("compiled again on steps 1, 2, 3: a new input shape")
    expect(page.get_by_test_id("finding-line")).to_have_text("line 24")
    expect(page.get_by_test_id("xla-changed")).to_contain_text("f32[6,4]{1,0} parameter(5)")
    shoot_both_themes(page, screenshots, "xla_cache-varying", full_page=True)

    # A Python exponent baked into the graph: the finding names the pow's line, and step 3's new
    # HLO lines hold the constant.
    page.get_by_test_id("example-select").select_option("python_scalar")
    run(page)
    expect(page.get_by_test_id("xla-finding")).to_contain_text("a changing constant in the graph")
    expect(page.get_by_test_id("finding-line")).to_have_text("line 18")
    page.get_by_test_id("xla-step").nth(3).click()
    expect(page.get_by_test_id("xla-changed")).to_contain_text("f32[] constant(3)")

    # Issue 33: five compiles inside one step, one per float() read, each carrying one more RNG
    # seed update; the cuts card lists them at their line.
    page.get_by_test_id("example-select").select_option("seed_float")
    run(page)
    finding = page.get_by_test_id("xla-finding")
    expect(finding).to_contain_text("CompilesInsideStep")
    expect(finding).to_contain_text("step 0 compiled 5 graphs")
    expect(page.get_by_test_id("finding-line")).to_have_text("line 17")
    cuts = page.get_by_test_id("xla-cut")
    expect(cuts).to_have_count(5)
    for i in range(5):
        expect(cuts.nth(i)).to_contain_text("float()")
        expect(cuts.nth(i)).to_contain_text("compiled")
    shoot_both_themes(page, screenshots, "xla_cache-seed", full_page=True)
    assert console_errors == []
