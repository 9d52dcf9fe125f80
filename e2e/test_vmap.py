"""The vmap exhibit in real Chromium: run the default example (per-example loss), step through
its eqns and see the batch axis coloured, change out_axes in the view and rerun, and see a
Python `if` on a batched value (case C01) fail with JAX's message on the user's line.
Screenshots in light and dark themes."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from e2e.browser import in_both_themes, open_exhibit, run_and_wait, set_code, set_theme
from e2e.replay import replay_runs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "exhibits" / "vmap" / "examples"
CASES = Path(__file__).resolve().parents[1] / "cases"


def load(path: Path) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def load_example(page: Page, name: str) -> None:
    page.get_by_test_id("example-select").select_option(name)
    expect(page.get_by_test_id("editor")).to_contain_text("def f(")


def go_to_step(page: Page, index: int) -> None:
    """Step from the first event until the card shows eqn ``index``."""
    page.get_by_test_id("stepper-first").click()
    for _ in range(40):
        card = page.get_by_test_id("vmap-card")
        if card.count() and card.get_attribute("data-index") == str(index):
            return
        page.get_by_test_id("stepper-next").click()
    pytest.fail(f"never reached step {index}")


def test_default_example_steps_with_the_batch_axis_coloured(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    # The page is answered with the example's recorded run (its golden; e2e/replay.py): what the
    # page shows of it, against jax.vmap here; the other tests here drive a real worker.
    page.set_viewport_size({"width": 1500, "height": 1100})
    answered = replay_runs(page, "vmap", "per_example_loss")
    open_exhibit(page, "vmap")
    set_theme(page, "light")
    load_example(page, "per_example_loss")  # the exhibit's default
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert len(answered) == 1, answered
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    expect(page.get_by_test_id("vmap-axis-size")).to_have_text("batch size 8")
    expect(page.get_by_test_id("vmap-in-axes")).to_have_value("(None, 0, 0)")

    # The page's outputs and batched jaxpr against jax.vmap in this process.
    ns = load(EXAMPLES / "per_example_loss.py")
    fun = jax.vmap(ns["f"], in_axes=(None, 0, 0))
    args = ns["args"]
    truth = np.asarray(fun(*args))
    shown = np.asarray(ast.literal_eval(page.get_by_test_id("vmap-output-0").inner_text()))
    np.testing.assert_allclose(shown, truth, rtol=1e-5, atol=1e-6)
    expect(page.get_by_test_id("vmap-match")).to_have_text("interpretation equals jax.vmap")
    text = str(jax.make_jaxpr(fun)(*args))
    for line in text.splitlines()[1:3]:
        expect(page.get_by_test_id("vmap-batched-jaxpr")).to_contain_text(line.strip())

    # Step 0: dot_general, x mapped on axis 0 (coloured), w not mapped.
    go_to_step(page, 0)
    expect(page.get_by_test_id("vmap-card-primitive")).to_have_text("dot_general")
    expect(page.get_by_test_id("example-eqn-0")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("vmap-card-rule-loc")).to_contain_text("jax/_src/lax/lax.py:")
    expect(page.get_by_test_id("vmap-in-0-bdim")).to_have_text("axis 0")
    expect(page.get_by_test_id("vmap-in-1-bdim")).to_have_text("not mapped")
    x_boxes = page.get_by_test_id("vmap-in-0-shape").locator(".box")
    expect(x_boxes).to_have_count(2)
    expect(x_boxes.nth(0)).to_have_attribute("data-batch", "true")
    expect(x_boxes.nth(0)).to_have_text("8")
    expect(x_boxes.nth(1)).to_have_attribute("data-batch", "false")
    w_boxes = page.get_by_test_id("vmap-in-1-shape").locator(".box[data-batch='true']")
    expect(w_boxes).to_have_count(0)

    def coloured_and_shot(theme: str) -> None:
        # the batch axis has its own colour in each theme
        batch_bg = x_boxes.nth(0).evaluate("e => getComputedStyle(e).backgroundColor")
        plain_bg = x_boxes.nth(1).evaluate("e => getComputedStyle(e).backgroundColor")
        assert batch_bg != plain_bg, theme
        page.screenshot(path=str(screenshots / f"vmap-step-dot-{theme}.png"), full_page=True)

    in_both_themes(page, coloured_and_shot)

    # Next step: add, and clicking it in the steps table selects its user line.
    page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("vmap-card-primitive")).to_have_text("add")
    page.get_by_test_id("vmap-step-0").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_contain_text('pred = jnp.dot(x, params["w"])')
    assert console_errors == []


def test_out_axes_edit_reruns_and_moves_the_axis(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "vmap")
    load_example(page, "matvec_shared_matrix")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("vmap-output-0-shape")).to_have_text("float32[5,4]")
    expect(page.get_by_test_id("vmap-output-moves")).to_contain_text("transpose")
    page.screenshot(path=str(screenshots / "vmap-matvec-out0.png"), full_page=True)

    page.get_by_test_id("vmap-out-axes").fill("1")
    page.get_by_test_id("vmap-apply-axes").click()
    expect(page.get_by_test_id("vmap-output-0-shape")).to_have_text("float32[4,5]", timeout=30_000)
    expect(page.get_by_test_id("vmap-output-moves")).to_have_count(0)
    expect(page.get_by_test_id("vmap-out-axes")).to_have_value("1")
    assert console_errors == []


def test_python_if_on_a_batched_value_fails_on_its_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    case = json.loads((CASES / "C01_escape_broken.expect.json").read_text())
    source = (CASES / "C01_escape_broken.py").read_text()
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "vmap")
    set_code(page, source)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    expect(page.get_by_test_id("error-class")).to_have_text(case["error_class"])
    expect(page.get_by_test_id("error-message")).to_contain_text(case["error_first_line"])
    expect(page.get_by_test_id("error-message")).to_contain_text("BatchTracer")
    expect(page.get_by_test_id("error-explanation")).to_contain_text("vmap")
    line = page.get_by_test_id("error-line")
    expect(line).to_contain_text(f"line {case['error_user_line']}")
    line.click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_contain_text("if jnp.abs(z) > 2.0:")
    # The arguments' mapping is still shown: the batch axis of c, max_iter static.
    expect(page.get_by_test_id("vmap-input-1")).to_contain_text("static argument")
    page.screenshot(path=str(screenshots / "vmap-c01-error.png"), full_page=True)
    assert console_errors == []


def test_rule_moves_are_marked(page: Page, console_errors: list[str], screenshots: Path) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "vmap")
    if page.locator("html").get_attribute("data-theme") != "dark":
        page.get_by_test_id("theme-toggle").click()
    load_example(page, "broadcast_columns")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    go_to_step(page, 0)
    expect(page.get_by_test_id("vmap-card-primitive")).to_have_text("mul")
    expect(page.get_by_test_id("vmap-in-0-bdim")).to_have_text("axis 1")
    expect(page.get_by_test_id("vmap-move")).to_contain_text("transpose[permutation=(1, 0)]")
    boxes = page.get_by_test_id("vmap-in-0-shape").locator(".box")
    expect(boxes.nth(1)).to_have_attribute("data-batch", "true")
    # The batched jaxpr highlights the transpose and the mul this step emitted.
    expect(page.get_by_test_id("batched-eqn-0")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("vmap-output-moves")).to_contain_text("broadcast_in_dim")
    page.screenshot(path=str(screenshots / "vmap-broadcast-move-dark.png"), full_page=True)
    assert console_errors == []


def test_rejected_in_axes_stay_in_the_boxes_and_the_error_points_at_their_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """in_axes_mismatch: jax.vmap rejects the snippet's in_axes. The boxes keep the axes the run
    tried, the error points at the line that sets in_axes, and says where JAX was."""
    source = (EXAMPLES / "in_axes_mismatch.py").read_text()
    ns: dict[str, Any] = {}
    exec(source, ns)
    with pytest.raises(ValueError) as truth:  # what plain jax.vmap says
        jax.vmap(ns["f"], in_axes=ns["in_axes"])(*ns["args"])
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "vmap")
    set_code(page, source)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    expect(page.get_by_test_id("vmap-in-axes")).to_have_value("(0, 0, None)")
    expect(page.get_by_test_id("vmap-out-axes")).to_have_value("0")
    expect(page.get_by_test_id("error-message")).to_have_text(str(truth.value))
    expect(page.get_by_test_id("error-during")).to_have_text(
        "while jax.vmap mapped the arguments (in_axes)"
    )
    line = page.get_by_test_id("error-line")
    expect(line).to_contain_text("line 12")
    line.click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_have_text("in_axes = (0, 0, None)")
    expect(page.get_by_test_id("vmap-failed")).to_contain_text("at line 12")
    assert page.get_by_test_id("vmap-inputs").count() == 0
    assert page.get_by_test_id("vmap-axis-size").count() == 0
    page.screenshot(path=str(screenshots / "vmap-in-axes-mismatch.png"))
    assert console_errors == []


def test_missing_batching_rule_lands_on_the_failing_eqn(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """no_batching_rule: sin and mul are batched (their steps shown), then 'twice' has no
    batching rule. At the end of the run the stepper stands on eqn 2, highlighted in the
    per-example jaxpr, and the card says JAX raised there; stepping back shows the sin step that
    succeeded."""
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "vmap")
    load_example(page, "no_batching_rule")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    expect(page.get_by_test_id("error-message")).to_contain_text(
        "Batching rule for 'twice' not implemented"
    )
    expect(page.get_by_test_id("vmap-card")).to_have_attribute("data-index", "2")
    expect(page.get_by_test_id("vmap-card-primitive")).to_have_text("twice")
    expect(page.get_by_test_id("vmap-card-sentence")).to_contain_text("JAX raised here")
    expect(page.get_by_test_id("vmap-card-failed")).to_be_visible()
    expect(page.get_by_test_id("example-eqn-2")).to_have_attribute("aria-pressed", "true")
    expect(page.get_by_test_id("example-eqn-1")).to_have_attribute("aria-pressed", "false")
    expect(page.get_by_test_id("vmap-step-count")).to_contain_text("step 3 / 4 · failed at eqn 2")
    expect(page.get_by_test_id("vmap-failed")).to_contain_text("failed at eqn 2")
    expect(page.get_by_test_id("vmap-step-0")).to_contain_text("sin")
    expect(page.get_by_test_id("vmap-step-1")).to_contain_text("mul")
    page.screenshot(path=str(screenshots / "vmap-no-batching-rule.png"), full_page=True)
    go_to_step(page, 0)
    expect(page.get_by_test_id("vmap-card-primitive")).to_have_text("sin")
    expect(page.get_by_test_id("vmap-in-0-bdim")).to_have_text("axis 0")
    expect(page.get_by_test_id("example-eqn-0")).to_have_attribute("aria-pressed", "true")
    assert page.get_by_test_id("vmap-failed").count() == 0
    assert console_errors == []
