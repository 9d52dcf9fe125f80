"""The nan_finder exhibit in real Chromium: on C22 (a where-guarded sqrt) it lands on line 7,
marks the NaN step and its NaN elements, and shows the double-where cure; the fixed version is
finite. Screenshots go to ``e2e/screenshots/`` (looked at, not pixel baselines)."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code
from exhibits.conftest import CASES

BROKEN = (CASES / "C22_where_sqrt_broken.py").read_text()
FIXED = (CASES / "C22_where_sqrt_fixed.py").read_text()


def test_nan_finder_lands_on_line_7_and_shows_the_cure(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "nan_finder")
    set_code(page, BROKEN)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("nan-headline")).to_have_text(
        "Step 3 wrote a NaN: mul (from sqrt) on line 7."
    )
    # The headline counts as the steps table does (from 1: the event's step 2 is row "3").
    expect(page.get_by_test_id("walk-step-2").locator("td").first).to_have_text("3")
    # The editor highlights line 7, the sqrt inside the where.
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_have_text("    return jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0))")
    # The NaN step is marked in the walk; its output has two NaN elements.
    # (its cells: the shared steps table sets no class on a row of its own)
    expect(page.get_by_test_id("walk-step-2").locator("td.nonfinite")).to_have_count(6)
    expect(page.get_by_test_id("value-out-0-bad")).to_have_count(2)
    expect(page.get_by_test_id("forward-verdict")).to_contain_text("encountered in sqrt")
    # The cure, before and after.
    expect(page.get_by_test_id("cure-before")).to_contain_text("jnp.sqrt(x)")
    expect(page.get_by_test_id("cure-after")).to_contain_text("safe_x = jnp.where(x > 0, x, 1.0)")
    expect(page.get_by_test_id("cure-after")).to_contain_text("jnp.sqrt(safe_x)")
    expect(page.get_by_test_id("cure-check")).to_contain_text("checked")
    page.screenshot(path=str(screenshots / "nan_finder-c22.png"), full_page=True)
    page.get_by_test_id("nan-step").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "nan_finder-c22-step.png"))
    page.get_by_test_id("gradient").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "nan_finder-c22-cure.png"))

    # Clicking the first step selects its line too (reduce_sum, line 7) and stepping back
    # through the events walks the steps.
    page.get_by_test_id("stepper-first").click()
    expect(page.get_by_test_id("walk-step-0")).to_have_count(0)
    # A replayed prefix of the finished run says where the run is, not "run the snippet".
    expect(page.get_by_test_id("nan-headline")).not_to_contain_text("Run the snippet")
    expect(page.locator(".nan")).not_to_contain_text("No step yet: step forward")
    page.screenshot(path=str(screenshots / "nan_finder-c22-event0.png"))
    event_type = page.get_by_test_id("stepper-event-type")
    for _ in range(12):
        if event_type.inner_text() == "transpose_stepped":
            break
        page.get_by_test_id("stepper-next").click()
    expect(event_type).to_have_text("transpose_stepped")
    expect(page.get_by_test_id("walk-step-0")).to_be_visible()
    expect(page.get_by_test_id("walk-step-1")).to_have_count(0)
    # The highlighted eqn is the step under the cursor (step 0: g = reduce_sum f), not the NaN
    # step's `mul` the run landed on.
    highlighted = page.locator('section[aria-labelledby="nf-linear"] [aria-pressed="true"]')
    expect(highlighted).to_have_count(1)
    expect(highlighted).to_contain_text("reduce_sum")
    expect(page.get_by_test_id("walk-step-0")).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator(".nan")).to_contain_text(
        "The highlighted eqn is the step under the cursor."
    )
    page.screenshot(path=str(screenshots / "nan_finder-c22-step0.png"))
    page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("walk-step-1")).to_be_visible()
    expect(page.get_by_test_id("nan-headline")).to_contain_text("Walking the backward pass")
    expect(highlighted).to_have_count(1)
    expect(highlighted).to_contain_text("jit[")
    page.get_by_test_id("stepper-last").click()
    expect(page.get_by_test_id("cure")).to_be_visible()
    expect(highlighted).to_have_count(1)
    expect(highlighted).to_contain_text("mul d a")
    expect(selected).to_have_text("    return jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0))")
    assert console_errors == []


def test_nan_finder_fixed_is_finite(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "nan_finder")
    set_code(page, FIXED)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("nan-headline")).to_contain_text("No NaN or Inf")
    expect(page.get_by_test_id("cure")).to_have_count(0)
    expect(page.get_by_test_id("gradient")).to_contain_text("0.25")
    page.get_by_test_id("theme-toggle").click()
    page.screenshot(path=str(screenshots / "nan_finder-fixed-theme2.png"), full_page=True)
    assert console_errors == []


def test_nan_finder_lands_inside_a_scan_body(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    # The finding itself (iteration, line, against jax.grad) is held in
    # exhibits/nan_finder/test_nan_finder.py; here: the user sees where it is.
    source = (
        Path(__file__).parent.parent / "exhibits/nan_finder/examples/scan_sqrt.py"
    ).read_text()
    sqrt_line = next(i for i, t in enumerate(source.splitlines(), 1) if "jnp.sqrt(x)" in t)
    open_exhibit(page, "nan_finder")
    page.get_by_test_id("example-select").select_option("scan_sqrt")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("nan-headline")).to_contain_text("inside scan on line")
    expect(page.get_by_test_id("nan-headline")).to_contain_text(", iteration 2,")
    expect(page.get_by_test_id("nan-headline")).to_contain_text(f"(from sqrt) on line {sqrt_line}.")
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_contain_text("jnp.sqrt(x)")
    expect(page.get_by_test_id("nan-inside")).to_contain_text("last first")
    expect(page.get_by_test_id("nan-inside")).to_contain_text("first hold NaN/Inf at iteration 2")
    # sqrt's forward value at that iteration (sqrt(0) = 0) is shown and finite.
    expect(page.get_by_test_id("forward-verdict")).to_contain_text(
        f"sqrt on line {sqrt_line}, iteration 2 of the scan, is finite"
    )
    # The walk highlights the scan step (the top-level step that went bad), not a body eqn.
    picked = page.locator('[data-testid^="walk-step-"].selected')
    expect(picked).to_have_count(1)
    expect(picked).to_contain_text("scan")
    page.get_by_test_id("nan-step").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "nan_finder-scan.png"))
    page.get_by_test_id("forward-verdict").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "nan_finder-scan-forward.png"))

    # Back at step 0 the editor and the linear jaxpr follow the cursor: the reduce_sum of the
    # return line, not the scan (nor the sqrt line inside it).
    page.get_by_test_id("stepper-first").click()
    event_type = page.get_by_test_id("stepper-event-type")
    for _ in range(12):
        if event_type.inner_text() == "transpose_stepped":
            break
        page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("walk-step-0")).to_be_visible()
    expect(page.get_by_test_id("walk-step-1")).to_have_count(0)
    expect(selected).to_have_count(1)
    expect(selected).to_have_text("    return jnp.sum(hs)")
    highlighted = page.locator('section[aria-labelledby="nf-linear"] [aria-pressed="true"]')
    expect(highlighted).to_have_count(1)
    expect(highlighted).to_contain_text("reduce_sum")
    page.screenshot(path=str(screenshots / "nan_finder-scan-step0.png"))
    # At the finding the landing is back: the sqrt line inside the body, the scan's eqn.
    page.get_by_test_id("stepper-last").click()
    expect(selected).to_contain_text("jnp.sqrt(x)")
    expect(highlighted).to_contain_text("scan")
    assert console_errors == []


def test_nan_finder_jit_helper_names_the_infinite_residual(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    # sqrt(0) = 0 is finite, the residual 0.5/sqrt(0) its JVP saved is not (values held in
    # exhibits/nan_finder/test_nan_finder.py): the verdict says both, no contradiction.
    open_exhibit(page, "nan_finder")
    page.get_by_test_id("example-select").select_option("jit_helper")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    verdict = page.get_by_test_id("forward-verdict")
    expect(verdict).to_contain_text("is finite, but residual b, which the rule reads, is Inf.")
    expect(verdict).to_contain_text("its derivative factor 0.5/sqrt(x)")
    expect(verdict).not_to_contain_text("only the cotangent went bad")
    verdict.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "nan_finder-jit_helper-verdict.png"))
    assert console_errors == []


def test_nan_finder_checkpoint_custom_vjp_and_vector_output(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    # Values held against JAX in exhibits/nan_finder/test_nan_finder.py (same sources).
    from exhibits.nan_finder.fixtures.capture import (
        CALLBACK_BWD,
        CHECKPOINT_SQRT,
        CUSTOM_VJP_BWD,
        VECTOR_WHERE,
    )

    open_exhibit(page, "nan_finder")
    set_code(page, CHECKPOINT_SQRT)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("nan-headline")).to_have_text(
        "Step 2 went bad; inside jax.checkpoint(g) on line 11, its step 1 wrote an Inf first: "
        "mul (from sqrt) on line 7."
    )
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_text("    return jnp.sqrt(x)")
    expect(page.get_by_test_id("forward-verdict")).to_contain_text("0.5/sqrt(x)")
    expect(page.get_by_test_id("forward-verdict")).to_contain_text(
        "recomputed in the backward pass"
    )
    page.get_by_test_id("forward-verdict").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "nan_finder-checkpoint.png"))

    set_code(page, CUSTOM_VJP_BWD)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    no_cure = page.get_by_test_id("no-cure")
    expect(no_cure).to_contain_text("custom_vjp backward rule h_bwd (defined on line 14)")
    expect(no_cure).to_contain_text("div on line 15")
    expect(no_cure).not_to_contain_text("custom_jvp")
    # The headline and the editor land on the bwd's bad line, not on the call in f.
    expect(page.get_by_test_id("nan-headline")).to_have_text(
        "Step 2 wrote an Inf: your custom_vjp backward rule h_bwd, div on line 15, run for the "
        "call on line 22."
    )
    expect(selected).to_have_text("    return (g / (r - r),)")
    expect(page.get_by_test_id("forward-verdict")).not_to_contain_text("forward value")
    page.screenshot(path=str(screenshots / "nan_finder-custom_vjp_bwd-top.png"))
    no_cure.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "nan_finder-custom_vjp_bwd.png"))

    # A pure_callback in the bwd that raises under jax_debug_nans: the run goes on.
    set_code(page, CALLBACK_BWD)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("forward-verdict")).to_contain_text(
        "FloatingPointError: invalid value (nan) encountered in div (raised inside a host callback"
    )
    page.get_by_test_id("forward-verdict").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "nan_finder-callback_bwd.png"))

    set_code(page, VECTOR_WHERE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("nan-seed")).to_contain_text(
        "ones(f32[3]): the output is not a scalar; this is the gradient of sum(f)"
    )
    expect(page.get_by_test_id("cure-check")).to_contain_text("jax.vjp(f, *args)[1](ones(f32[3]))")
    expect(page.get_by_test_id("forward-verdict")).to_contain_text(
        "Under jax_debug_nans, jax.vjp with the ones(f32[3]) cotangent (jax.grad itself refuses"
    )
    page.screenshot(path=str(screenshots / "nan_finder-vector.png"), full_page=True)
    assert console_errors == []
