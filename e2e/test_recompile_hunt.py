"""The recompile hunt in real Chromium: run a preset and see the recompiling steps (against JAX's
own compile log, counted here by a plain run) and the cause on the right line; the default
example (a fresh closure) recompiles on every step; the steps control reruns with another N.
Screenshots in light and dark themes."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from exhibits.recompile_hunt.golden.regen import plain_run

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "exhibits" / "recompile_hunt" / "examples"


def check_strip(page: Page, compiled_steps: list[int], n: int) -> None:
    for i in range(n):
        status = (
            "hit"
            if i not in compiled_steps
            else ("first" if i == compiled_steps[0] else "recompile")
        )
        expect(page.get_by_test_id(f"step-{i}")).to_have_attribute("data-status", status)
    expect(page.get_by_test_id(f"step-{n}")).to_have_count(0)


def test_ragged_batch_recompiles_on_the_short_batch(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1200})
    open_exhibit(page, "recompile_hunt")
    set_theme(page, "light")
    page.get_by_test_id("example-select").select_option("ragged_batch")
    expect(page.get_by_test_id("editor")).to_contain_text("BATCH = 4")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    source = (EXAMPLES / "ragged_batch.py").read_text()
    truth = plain_run(source)
    check_strip(page, truth["compiled_steps"], len(truth["steps"]))
    # The first recompile is shown: a new shape of x, on the line that calls step.
    card = page.get_by_test_id("cause-card")
    expect(card.get_by_test_id("cause-kind")).to_have_text("new shape")
    expect(card.get_by_test_id("cause")).to_contain_text(
        "new shape at x: now f32[2,3], before f32[4,3]"
    )
    expect(card.get_by_test_id("fix")).to_contain_text("Pad the batch")
    differing = card.locator("[data-testid=key-entry][data-differs=true]")
    expect(differing).to_have_count(2)
    expect(card.get_by_test_id("explanation")).to_contain_text(
        "* at x, now f32[2,3] and before f32[4,3]"
    )
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    card.get_by_test_id("cause-line").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected.first).to_contain_text(
        "params = step(params, X[s : s + BATCH], Y[s : s + BATCH])"
    )
    shoot_both_themes(page, screenshots, "recompile_hunt-ragged", full_page=True)
    # A cache-hit step says so.
    page.get_by_test_id("step-3").click()
    expect(card.get_by_test_id("cause-kind")).to_have_text("cache hit")
    assert console_errors == []


def test_default_fresh_closure_and_steps_rerun(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1200})
    open_exhibit(page, "recompile_hunt")
    expect(page.get_by_test_id("editor")).to_contain_text("def update(params)")
    run_and_wait(page)
    source = (EXAMPLES / "fresh_closure.py").read_text()
    truth = plain_run(source)
    check_strip(page, truth["compiled_steps"], len(truth["steps"]))
    card = page.get_by_test_id("cause-card")
    expect(card.get_by_test_id("cause-kind")).to_have_text("new function object")
    expect(card.get_by_test_id("fix")).to_contain_text("Hoist the jit")
    card.get_by_test_id("cause-line").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected.first).to_contain_text("return update(params)")
    page.screenshot(
        path=str(screenshots / "recompile_hunt-fresh_closure-light.png"), full_page=True
    )
    page.get_by_test_id("steps-input").fill("3")
    page.get_by_test_id("steps-run").click()
    expect(page.get_by_test_id("step-2")).to_be_visible()
    expect(page.get_by_test_id("step-3")).to_have_count(0, timeout=30_000)
    expect(page.get_by_test_id("hunt-summary")).to_contain_text("3 steps")
    assert console_errors == []


ENDLESS = """import jax
import jax.numpy as jnp


@jax.jit
def step(p):
    return p * 0.5 + 1.0


def f(n):
    p = jnp.zeros(3)
    for i in range(10**9):
        p = step(p)
    return p


args = (3,)
"""


def test_a_loop_past_the_step_cap_is_stopped_and_says_so(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """A driver that ignores n: 200 steps, then the stop says the step cap (not the time
    budget) stopped it, and the run finishes."""
    page.set_viewport_size({"width": 1500, "height": 900})
    open_exhibit(page, "recompile_hunt")
    set_code(page, ENDLESS)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    check_strip(page, [0], 200)
    expect(page.get_by_test_id("hunt-stopped")).to_have_text(
        "Stopped after 200 steps: the hunt watches at most 200 steps, and the loop called step"
        " again, so that call was not run. f was called with n = 3: does the loop use n?"
    )
    page.screenshot(path=str(screenshots / "recompile_hunt-step-cap-light.png"))
    assert console_errors == []


def test_a_requested_n_past_the_cap_is_shown_and_the_cap_named(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """clean_loop with args = (10**9,): the box shows the n f was called with (not the 200
    steps that ran), the stop says the step cap stopped it, no "does the loop use n?"."""
    page.set_viewport_size({"width": 1500, "height": 900})
    open_exhibit(page, "recompile_hunt")
    source = (EXAMPLES / "clean_loop.py").read_text()
    set_code(page, source.replace("args = (6,)", "args = (10**9,)"))
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("steps-input")).to_have_value("1000000000")
    stopped = page.get_by_test_id("hunt-stopped")
    expect(stopped).to_contain_text("f was called with n = 1000000000")
    expect(stopped).to_contain_text("the step cap stopped it")
    expect(stopped).not_to_contain_text("use n")
    page.screenshot(path=str(screenshots / "recompile_hunt-requested-n-light.png"))
    assert console_errors == []
