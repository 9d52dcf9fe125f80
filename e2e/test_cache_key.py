"""The cache_key exhibit in real Chromium: run the default example and see the recomputed key
equal to JAX's; perturb one ingredient (compiler options, then the function's line) and see
exactly its digest change (or none); filter XLA flags as JAX does. Screenshots in light and
dark themes."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_theme, shoot_both_themes

INGREDIENTS = [
    "computation",
    "jax_lib-version",
    "backend-version",
    "XLA-flags",
    "compile_options",
    "accelerator_config",
    "compression",
    "custom_hook",
]


def perturb(page: Page, which: str) -> None:
    page.get_by_test_id(f"perturb-{which}").click()
    # pressed once the rerun's result is in (a worker may be starting: CI runs 2 test processes)
    expect(page.get_by_test_id(f"perturb-{which}")).to_have_attribute(
        "aria-pressed", "true", timeout=30_000
    )
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=30_000)
    expect(page.get_by_test_id("change-summary")).to_be_visible()


def changed_cells(page: Page) -> list[str]:
    return [
        name
        for name in INGREDIENTS
        if page.get_by_test_id(f"other-digest-{name}").get_attribute("data-changed") == "true"
    ]


def test_perturb_an_ingredient_and_see_its_digest_change(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1200})
    open_exhibit(page, "cache_key")
    set_theme(page, "light")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("key-equal")).to_have_text("equal, byte for byte")
    key = page.get_by_test_id("recomputed-key").inner_text()
    assert re.fullmatch(r"jit_f-[0-9a-f]{64}", key)
    assert page.get_by_test_id("jax-key").inner_text() == key
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    base = {n: page.get_by_test_id(f"digest-{n}").get_attribute("title") for n in INGREDIENTS}

    perturb(page, "compiler_options")
    assert changed_cells(page) == ["compile_options"]
    expect(page.get_by_test_id("change-summary")).to_contain_text(
        "1 digest changed: compile_options"
    )
    # the base digests are the same as before: the run starts from a clean cache state
    for n in INGREDIENTS:
        assert page.get_by_test_id(f"digest-{n}").get_attribute("title") == base[n]
    shoot_both_themes(page, screenshots, "cache_key-perturbed", full_page=True)

    perturb(page, "line")
    assert changed_cells(page) == []
    expect(page.get_by_test_id("change-summary")).to_contain_text("no digest changed")
    assert page.get_by_test_id("perturbed-key").inner_text() == key
    assert console_errors == []


def test_xla_flag_filter(page: Page, console_errors: list[str]) -> None:
    open_exhibit(page, "cache_key")
    run_and_wait(page)
    page.get_by_test_id("xla-flags-input").fill(
        "--xla_dump_to=/tmp/d --xla_cpu_enable_fast_math=true"
    )
    page.get_by_test_id("xla-flags-run").click()
    expect(page.get_by_test_id("flags-table")).to_be_visible(timeout=30_000)
    rows = page.get_by_test_id("flag-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("--xla_cpu_enable_fast_math=true")
    expect(rows.nth(0).get_by_test_id("flag-verdict")).to_have_text("kept")
    expect(rows.nth(1).get_by_test_id("flag-verdict")).to_have_text("dropped")
    expect(rows.nth(1)).to_contain_text("dumps")
    assert console_errors == []
