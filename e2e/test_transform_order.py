"""The transform_order exhibit in real Chromium: reorder two chips (keyboard and drag) and see the
result and the trace diagram change; an invalid stack shows JAX's own error (text computed by JAX
in this test process) with its user line selectable; the palette and remove button edit the stack.
Screenshots in light and dark themes."""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from e2e.browser import RUN_TIMEOUT_MS, open_exhibit, run_and_wait, set_theme, shoot_both_themes
from exhibits.registry import EXHIBITS_DIR
from exhibits.transform_order.golden.regen import load

EXAMPLE = EXHIBITS_DIR / "transform_order" / "examples" / "per_example_grads.py"


def chips(page: Page) -> list[str]:
    return [
        c.get_attribute("data-chip") or ""
        for c in page.get_by_test_id("chip-stack").locator("[data-chip]").all()
    ]


def boxes(page: Page) -> list[str]:
    """The trace classes of the first argument's nest, outermost first."""
    first = page.get_by_test_id("trace-diagram").locator(".arg").first
    return [b.get_attribute("data-trace") or "" for b in first.get_by_test_id("trace-box").all()]


def load_example(page: Page, name: str) -> None:
    """Pick one of the exhibit's examples (the editor keeps the code across exhibits)."""
    open_exhibit(page, "transform_order")
    page.get_by_test_id("example-select").select_option(name)
    expect(page.get_by_test_id("editor")).to_contain_text("stack = ")


def wait_for_expression(page: Page, text: str) -> None:
    expect(page.get_by_test_id("stack-expression")).to_have_text(text, timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=RUN_TIMEOUT_MS
    )


def test_reorder_chips_changes_result_and_diagram(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    ns = load(EXAMPLE)
    args = tuple(ns["args"])
    load_example(page, "per_example_grads")
    set_theme(page, "light")
    run_and_wait(page)  # the default example: per_example_grads, stack vmap, grad
    wait_for_expression(page, "vmap(grad(f), in_axes=(None, 0, 0))(*args)")
    assert chips(page) == ["vmap", "grad"]
    expect(page.get_by_test_id("verdict").first).to_have_text("JAX accepts it")
    want = jax.vmap(jax.grad(ns["f"]), in_axes=(None, 0, 0))(*args)
    shown = np.asarray(ast.literal_eval(page.get_by_test_id("stack-result").first.inner_text()))
    np.testing.assert_allclose(shown, np.asarray(want), rtol=1e-5, atol=1e-6)
    # w meets grad's trace only (params not mapped); the whole nest is observed inside f
    assert boxes(page) == ["concrete", "LinearizeTrace"]
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    expect(page.get_by_test_id("group-jacobian").get_by_test_id("jacobian-row")).to_have_count(4)
    shoot_both_themes(page, screenshots, "transform_order-vmap-grad", full_page=True)

    # Keyboard: focus grad, Alt+ArrowLeft -> grad(vmap(f)): JAX rejects it (not scalar).
    page.get_by_test_id("chip-1").focus()
    page.keyboard.press("Alt+ArrowLeft")
    wait_for_expression(page, "grad(vmap(f, in_axes=(None, 0, 0)))(*args)")
    assert chips(page) == ["grad", "vmap"]
    with pytest.raises(TypeError) as info:
        jax.grad(jax.vmap(ns["f"], in_axes=(None, 0, 0)))(*args)
    expect(page.get_by_test_id("stack-error-message")).to_have_text(f"TypeError: {info.value}")
    expect(page.get_by_test_id("stack-error-explanation")).to_contain_text("vmap(grad(f))")
    # the diagram changed: now x meets vmap's trace; w meets grad's trace outside it
    first = page.get_by_test_id("trace-diagram").locator(".arg")
    assert [
        b.get_attribute("data-trace") for b in first.nth(1).get_by_test_id("trace-box").all()
    ] == [
        "concrete",
        "BatchTrace",
    ]
    page.get_by_test_id("stack-error-line").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    shoot_both_themes(page, screenshots, "transform_order-grad-vmap", full_page=True)

    # Drag vmap back in front of grad: the original order and result again.
    page.get_by_test_id("chip-1").drag_to(page.get_by_test_id("chip-0"))
    wait_for_expression(page, "vmap(grad(f), in_axes=(None, 0, 0))(*args)")
    assert chips(page) == ["vmap", "grad"]
    assert boxes(page) == ["concrete", "LinearizeTrace"]
    assert console_errors == []


def test_palette_adds_and_remove_drops_a_chip(page: Page, console_errors: list[str]) -> None:
    load_example(page, "per_example_grads")
    run_and_wait(page)
    wait_for_expression(page, "vmap(grad(f), in_axes=(None, 0, 0))(*args)")
    page.get_by_test_id("palette-jit").click()
    wait_for_expression(page, "vmap(grad(jit(f)), in_axes=(None, 0, 0))(*args)")
    # jit innermost: f sees only jit's tracer; grad and vmap transform the jaxpr jit staged
    assert boxes(page) == ["DynamicJaxprTrace"]
    page.get_by_test_id("chip-0").focus()
    page.keyboard.press("Delete")
    wait_for_expression(page, "grad(jit(f))(*args)")
    expect(page.get_by_test_id("stack-error-message")).to_contain_text(
        "Gradient only defined for scalar-output functions"
    )
    page.get_by_test_id("chip-remove-1").click()
    wait_for_expression(page, "grad(f)(*args)")
    assert chips(page) == ["grad"]
    assert console_errors == []


def test_a_jitted_f_says_the_tracers_are_its_jit_calls(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """``f = jax.jit(f)``: the diagram says the innermost tracer is what the jit call received,
    and that jit traces f's body with DynamicJaxprTracers (a new-user review found 'f receives
    LinearizeTracer' for a jitted model)."""
    from e2e.browser import set_code

    source = (EXHIBITS_DIR / "transform_order" / "examples" / "per_example_grads.py").read_text()
    open_exhibit(page, "transform_order")
    set_code(page, source + "\nimport jax\n\nf = jax.jit(f)\n")
    run_and_wait(page)
    expect(page.get_by_test_id("verdict").first).to_have_text("JAX accepts it")
    diagram = page.get_by_test_id("trace-diagram").first
    expect(diagram.get_by_test_id("traces-at-jit")).to_contain_text("DynamicJaxprTracer")
    expect(diagram).to_contain_text("jax.jit(f) receives")
    expect(diagram).not_to_contain_text("f receives LinearizeTracer")
    page.screenshot(path=str(screenshots / "transform_order-jitted-f.png"))
    assert console_errors == []
