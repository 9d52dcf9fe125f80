"""The caches exhibit in real Chromium: run the default example and a preset sequence, and see the
timeline with the hits and misses that plain JAX reports for the same calls (replayed here from
public signals by ``exhibits/caches/golden/regen.py``); step and click through the calls; the
diff table marks the differing entry; C05's loop flags "same line, new function object".
Screenshots in light and dark themes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from exhibits.caches.golden import regen

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "exhibits" / "caches" / "examples"
LAYERS = ("cpp", "jaxpr", "lowering", "executable", "persistent")


def check_timeline(page: Page, truth: list[dict[str, Any]]) -> None:
    columns = page.get_by_test_id("caches-timeline").locator("button.column")
    expect(columns).to_have_count(len(truth))
    for i, t in enumerate(truth):
        expect(page.get_by_test_id(f"caches-call-{i}")).to_have_attribute("data-layer", t["layer"])
        cpp = "hit" if t["layer"] == "cpp" else "miss"
        expect(page.get_by_test_id(f"caches-cell-{i}-cpp")).to_have_attribute("data-cell", cpp)
        if t["layer"] != "cpp":
            jaxpr = "miss" if t["traced"] else "hit"
            expect(page.get_by_test_id(f"caches-cell-{i}-jaxpr")).to_have_attribute(
                "data-cell", jaxpr
            )
        bar = page.get_by_test_id(f"caches-bar-{i}")
        height = bar.evaluate("e => e.getBoundingClientRect().height")
        assert (height > 0) == t["compiled"], (i, height)


def test_default_example_timeline_equals_plain_jax(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1200})
    open_exhibit(page, "caches")
    set_theme(page, "light")
    page.get_by_test_id("example-select").select_option("new_shape")
    expect(page.get_by_test_id("editor")).to_contain_text("calls = [")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    truth = regen.golden((EXAMPLES / "new_shape.py").read_text())["calls"]
    check_timeline(page, truth)
    expect(page.get_by_test_id("caches-reset")).to_contain_text("jax.clear_caches()")
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    # The last call (current at the end of the run): a new shape, marked in the diff table.
    expect(page.get_by_test_id("caches-layer")).to_have_text("no cache: XLA compiled")
    differs = page.get_by_test_id("caches-diff").locator("tr[data-differs=true]")
    expect(differs).to_have_count(1)
    expect(differs).to_contain_text("x aval")
    expect(differs).to_contain_text("f32[4]")
    expect(page.get_by_test_id("caches-explanation")).to_contain_text("different input types")
    shoot_both_themes(page, screenshots, "caches-default", full_page=True)
    # Click the second call: the C++ fast path answered; nothing differs, nothing to explain.
    page.get_by_test_id("caches-call-1").click()
    expect(page.get_by_test_id("caches-call-1")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("caches-layer")).to_have_text("C++ fast path")
    expect(page.get_by_test_id("caches-diff").locator("tr[data-differs=true]")).to_have_count(0)
    expect(page.get_by_test_id("caches-explanation-none")).to_be_visible()
    # The stepper walks the calls: back to the first call's event, the later ones are pending.
    page.get_by_test_id("stepper-first").click()
    for _ in range(6):
        if page.get_by_test_id("stepper-event-type").inner_text() == "jit_call_observed":
            break
        page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("caches-call-0")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("caches-call-2")).to_have_attribute("data-state", "pending")
    assert console_errors == []


def test_committed_preset_shows_a_lowering_jax_does_not_explain(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "caches")
    page.get_by_test_id("example-select").select_option("new_shape")
    expect(page.get_by_test_id("editor")).to_contain_text("calls = [")
    run_and_wait(page)
    page.get_by_test_id("caches-preset").select_option("committed")
    expect(page.get_by_test_id("caches-timeline").locator("button.column")).to_have_count(2)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=30_000)

    def f(x: Any) -> Any:
        return jnp.sin(x) * 2.0

    x = jnp.ones(3)
    truth = regen.replay_calls(jax.jit(f), [(x,), (jax.device_put(x, jax.devices()[0]),)])
    check_timeline(page, truth)
    expect(page.get_by_test_id("caches-cell-1-lowering")).to_have_attribute("data-cell", "miss")
    expect(page.get_by_test_id("caches-silent")).to_contain_text("x placement")
    differs = page.get_by_test_id("caches-diff").locator("tr[data-differs=true]")
    expect(differs).to_contain_text("committed")
    page.screenshot(path=str(screenshots / "caches-committed.png"), full_page=True)
    assert console_errors == []


def test_persistent_preset_answers_the_second_call_from_disk(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    # The truth (plain JAX's cache_misses/cache_hits events, the file JAX wrote, the key it
    # logged) is held in exhibits/caches/test_caches.py; here: the user sees it.
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "caches")
    page.get_by_test_id("example-select").select_option("same_call")
    run_and_wait(page)
    page.get_by_test_id("caches-preset").select_option("persistent")
    expect(page.get_by_test_id("caches-timeline").locator("button.column")).to_have_count(2)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=30_000)
    expect(page.get_by_test_id("caches-persistent-dir")).to_contain_text(
        "jaxscope-persistent-cache"
    )
    expect(page.get_by_test_id("caches-call-0")).to_have_attribute("data-layer", "compile")
    expect(page.get_by_test_id("caches-cell-0-persistent")).to_have_attribute("data-cell", "miss")
    expect(page.get_by_test_id("caches-call-1")).to_have_attribute("data-layer", "persistent")
    expect(page.get_by_test_id("caches-cell-1-persistent")).to_have_attribute("data-cell", "hit")
    expect(page.get_by_test_id("caches-layer")).to_have_text("persistent disk cache")
    expect(page.get_by_test_id("caches-persistent")).to_contain_text("hit: JAX read the executable")
    expect(page.get_by_test_id("caches-cause")).to_contain_text("jax.clear_caches()")
    differs = page.get_by_test_id("caches-diff").locator("tr[data-differs=true]")
    expect(differs).to_have_count(1)
    expect(differs).to_contain_text("in-memory caches")
    page.screenshot(path=str(screenshots / "caches-persistent.png"), full_page=True)
    assert console_errors == []


def test_c05_loop_flags_same_line_new_object(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "caches")
    set_theme(page, "dark")
    page.get_by_test_id("example-select").select_option("jit_in_loop")
    expect(page.get_by_test_id("editor")).to_contain_text("while i < n")
    run_and_wait(page)
    golden = regen.golden((EXAMPLES / "jit_in_loop.py").read_text())
    columns = page.get_by_test_id("caches-timeline").locator("button.column")
    expect(columns).to_have_count(sum(golden["compiles_by_function"].values()))
    for i in range(columns.count()):
        expect(page.get_by_test_id(f"caches-call-{i}")).to_have_attribute("data-layer", "compile")
    expect(page.get_by_test_id("caches-same-line")).to_be_visible()
    expect(page.get_by_test_id("caches-cause")).to_contain_text("new function object")
    expect(page.get_by_test_id("caches-explanation")).to_contain_text("re-defined repeatedly")
    page.screenshot(path=str(screenshots / "caches-c05-dark.png"), full_page=True)
    assert console_errors == []


DRIVER_CASES = ROOT / "exhibits" / "caches" / "driver_cases"


def test_driver_notes_say_what_the_timeline_does_not_show(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """A driver whose jitted g is also vmapped and differentiated eagerly: the timeline's two
    calls, the header's count of the compiles outside them (the summary's, which the fresh-process
    test checks against jax_log_compiles), and the note naming the lines. Then eager code: no
    timeline, and the plain "no jitted call of your code was observed" note."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "caches")
    set_code(page, (DRIVER_CASES / "vmap_of_jit.py").read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("caches-timeline").locator("button.column")).to_have_count(2)
    expect(page.get_by_test_id("caches-summary")).to_contain_text(
        re.compile(r"2 calls · 1 traced · 1 compiled · \d+ more compiles outside these calls")
    )
    note = page.get_by_test_id("caches-driver-note")
    expect(note).to_contain_text("Incomplete:")
    expect(note).to_contain_text("g called under jax.vmap at line")
    page.screenshot(path=str(screenshots / "caches-driver-incomplete.png"), full_page=True)
    set_code(page, (DRIVER_CASES / "eager_only.py").read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("caches-timeline")).to_have_count(0)
    expect(page.get_by_test_id("caches-empty")).to_have_count(0)
    note = page.get_by_test_id("caches-driver-note")
    expect(note).to_contain_text("no jitted call of your code was observed")
    expect(note).to_contain_text("What to try")
    page.screenshot(path=str(screenshots / "caches-driver-nothing.png"), full_page=True)
    assert console_errors == []
