"""A train step (``f`` returns ``(loss, new_params)``) in the three exhibits that differentiate
``f``: each says at the top that it differentiates the first leaf, the loss, with its key path
and the output's structure (``jaxscope.grad_output``). Screenshots go to ``e2e/screenshots/``
(looked at, not pixel baselines)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code
from exhibits.train_steps import TRAIN_STEP

STRUCTURE = "(f32[], {'b1': f32[4], 'b2': f32[2], 'w1': f32[3,4], 'w2': f32[4,2]})"


def test_transpose_says_it_walks_the_first_leaf(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "transpose")
    set_code(page, TRAIN_STEP)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    note = page.get_by_test_id("tw-output-leaf")
    expect(note).to_contain_text("f returns a pytree of 5 leaves (tuple)")
    expect(note).to_contain_text("differentiating its first leaf, a float32 scalar")
    expect(note).to_contain_text("output path [0]")
    expect(note).to_contain_text(STRUCTURE)
    # Near the top: above the attempts, which both work (they take the same leaf's gradient).
    attempts = page.get_by_test_id("tw-attempts")
    assert note.bounding_box()["y"] < attempts.bounding_box()["y"]  # type: ignore[index]
    expect(page.get_by_test_id("tw-attempt-jit-outcome")).to_have_text("works")
    expect(page.get_by_test_id("tw-attempt-eager-outcome")).to_have_text("works")
    expect(page.get_by_test_id("tw-equal")).to_contain_text("bit-identical")
    expect(page.get_by_test_id("tw-fd-coverage")).to_contain_text(
        "Finite differences at every element"
    )
    page.screenshot(path=str(screenshots / "train-step-transpose.png"), full_page=True)
    assert console_errors == []


def test_nan_finder_says_it_walks_the_first_leaf(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "nan_finder")
    set_code(page, TRAIN_STEP)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    note = page.get_by_test_id("nan-output-leaf")
    expect(note).to_contain_text("differentiating its first leaf")
    expect(note).to_contain_text("output path [0]")
    expect(note).to_contain_text(STRUCTURE)
    headline = page.get_by_test_id("nan-headline")
    assert headline.bounding_box()["y"] < note.bounding_box()["y"]  # type: ignore[index]
    page.screenshot(path=str(screenshots / "train-step-nan_finder.png"), full_page=True)
    assert console_errors == []


def test_transform_order_says_which_chip_took_the_first_leaf(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "transform_order")
    set_code(page, TRAIN_STEP)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("stack-expression")).to_have_text(
        "vmap(grad(f), in_axes=(None, 0, 0))(*args)"
    )
    note = page.get_by_test_id("stack-output-leaf")
    expect(note).to_have_count(1)
    expect(note).to_contain_text("grad: f returns a pytree of 5 leaves")
    expect(note).to_contain_text("output path [0]")
    expect(page.get_by_test_id("verdict").first).to_have_text("JAX accepts it")
    page.screenshot(path=str(screenshots / "train-step-transform_order.png"), full_page=True)
    assert console_errors == []
