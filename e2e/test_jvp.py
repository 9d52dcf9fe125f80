"""The jvp exhibit in real Chromium: step through the JVP of a small function, check the values
the page shows against JAX computed in this test process, click a step and see its user line."""

from __future__ import annotations

import ast
import runpy
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from exhibits.conftest import CASES

SOURCE = """import jax.numpy as jnp

def f(x):
    y = jnp.sin(x)
    z = y * x
    return jnp.sum(z)

args = (jnp.array([0.5, 1.0, 2.0]),)
"""
X = np.array([0.5, 1.0, 2.0], np.float32)


def f(x: jax.Array) -> jax.Array:
    return jnp.sum(jnp.sin(x) * x)


def shown(page: Page, testid: str) -> np.ndarray:
    return np.asarray(ast.literal_eval(page.get_by_test_id(testid).inner_text()), np.float64)


def go_to_step(page: Page, index: int) -> None:
    """Step back from the end until the card shows primal eqn ``index``."""
    page.get_by_test_id("stepper-first").click()
    for _ in range(40):
        card = page.get_by_test_id("jvp-card")
        if card.count() and card.get_attribute("data-index") == str(index):
            return
        page.get_by_test_id("stepper-next").click()
    pytest.fail(f"never reached step {index}")


def test_step_through_jvp_and_check_values(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "jvp")
    set_theme(page, "light")
    set_code(page, SOURCE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    # Truth from JAX in this process: tangent = ones.
    t = np.ones(3, np.float32)
    p_out, t_out = jax.jvp(f, (X,), (t,))
    assert float(page.get_by_test_id("jvp-max-diff").inner_text()) <= 1e-5
    expect(page.get_by_test_id("jvp-match")).to_have_text("matches jax.jvp")
    values = page.get_by_test_id("jvp-out-value")
    np.testing.assert_allclose(float(values.nth(0).inner_text()), float(p_out), rtol=1e-5)
    np.testing.assert_allclose(float(values.nth(1).inner_text()), float(t_out), rtol=1e-5)

    # Step 0 (sin): tangent out = cos(x) * 1.
    go_to_step(page, 0)
    expect(page.get_by_test_id("jvp-card-primitive")).to_have_text("sin")
    expect(page.get_by_test_id("primal-eqn-0")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("jvp-card-rule-loc")).to_contain_text("jax/_src/lax/lax.py:")
    np.testing.assert_allclose(shown(page, "jvp-in-0-primal"), X, rtol=1e-5)
    np.testing.assert_allclose(shown(page, "jvp-in-0-tangent"), t, rtol=1e-5)
    np.testing.assert_allclose(shown(page, "jvp-out-0-tangent"), np.cos(X), rtol=1e-5)
    shoot_both_themes(page, screenshots, "jvp-step-sin", full_page=True)

    # Step 1 (mul): tangent out = cos(x) * x + sin(x) * 1 = the product rule.
    page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("jvp-card-primitive")).to_have_text("mul")
    np.testing.assert_allclose(
        shown(page, "jvp-out-0-tangent"), np.cos(X) * X + np.sin(X), rtol=1e-5
    )
    # Its emitted eqns are highlighted in the whole JVP jaxpr (mul, mul, mul, add_any).
    emitted = page.get_by_test_id("jvp-card-eqns").inner_text().splitlines()
    assert [e.split(" = ")[1].split()[0] for e in emitted] == ["mul", "mul", "mul", "add_any"]
    assert page.locator('[data-testid^="jvp-eqn-"][aria-pressed="true"]').count() == 4

    # Click a step: its user line lights up in the editor.
    page.get_by_test_id("stepper-last").click()
    page.get_by_test_id("jvp-step-0").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_have_text("    y = jnp.sin(x)")
    expect(page.get_by_test_id("jvp-card-primitive")).to_have_text("sin")
    # Clicking a JVP eqn goes to the primal eqn it came from (reduce_sum, line 6).
    page.get_by_test_id("jvp-eqn-7").click()
    expect(page.get_by_test_id("jvp-card-primitive")).to_have_text("reduce_sum")
    expect(selected).to_have_text("    return jnp.sum(z)")
    shoot_both_themes(page, screenshots, "jvp-end", full_page=True)
    assert console_errors == []


def test_jvp_of_a_custom_vjp_shows_jaxs_jvp_error(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """C20_int_arg_broken: tracing fails first (an int custom_vjp argument used as a shape), but
    the page reports what plain jax.jvp raises, explained in terms of forward mode."""
    path = CASES / "C20_int_arg_broken.py"
    ns = runpy.run_path(str(path))
    with pytest.raises(TypeError) as plain:  # the truth: plain eager jax.jvp in this process
        jax.jvp(ns["f"], ns["args"], jax.tree.map(np.ones_like, ns["args"]))
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "jvp")
    set_code(page, path.read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    expect(page.get_by_test_id("error-class")).to_have_text("TypeError")
    expect(page.get_by_test_id("error-message")).to_have_text(str(plain.value))
    expect(page.get_by_test_id("error-line")).to_contain_text("27")
    why = page.get_by_test_id("error-explanation")
    expect(why).to_contain_text("Forward mode (jax.jvp, jax.jacfwd) needs a JVP rule")
    assert "grad" not in why.inner_text()
    expect(page.get_by_test_id("jvp-failed")).to_contain_text("TypeError at line 27")
    page.screenshot(path=str(screenshots / "jvp-custom-vjp-error.png"), full_page=True)
    assert console_errors == []


def test_long_vectors_wrap_and_the_side_table_fits(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """mlp_loss: b1's tangent (16 ones) is shown whole, wrapped, not cut off in a scrolling box;
    the JVP eqn → primal eqn table shows every column unclipped, one line per row."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "jvp")
    page.get_by_test_id("example-select").select_option("mlp_loss")
    expect(page.get_by_test_id("editor")).to_contain_text("def f(")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    b1 = page.get_by_test_id("jvp-tangents").locator("tr", has_text="['b1']").locator("pre")
    values = np.asarray(ast.literal_eval(b1.inner_text()))
    np.testing.assert_array_equal(values, np.ones(16, np.float32))  # the default direction
    assert b1.evaluate("e => e.scrollWidth <= e.clientWidth")
    origin = page.get_by_test_id("jvp-origin")
    box = origin.locator("xpath=..")
    assert box.evaluate("e => e.scrollWidth <= e.clientWidth")
    heights = origin.locator("tbody tr").evaluate_all("rows => rows.map(r => r.clientHeight)")
    assert max(heights) == min(heights)  # no row wraps onto a second line
    heading = page.get_by_role("heading", name="Checked against jax.jvp")
    # the check is set apart from the JVP jaxpr above it
    gap = heading.evaluate(
        "e => e.getBoundingClientRect().top"
        " - e.closest('section').previousElementSibling.getBoundingClientRect().bottom"
    )
    assert float(gap) > 8
    heading.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "jvp-mlp-loss-end.png"))
    assert console_errors == []
