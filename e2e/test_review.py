"""The review exhibit in real Chromium: the default example's findings are shown each at the line
of the example where the bug is (found by searching the example's text), with a fix; the steps
table shows the executables each step launched (one jit + two eager ops on each of the two
parameters: 5, by construction); the static/dynamic table of the inner jit is plain
``args_info``'s. Screenshots in the light and dark themes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from e2e.replay import replay_runs
from exhibits.registry import EXHIBITS

EXAMPLE = EXHIBITS["review"].example_paths()[EXHIBITS["review"].default_example]

# kind -> the text of the example's line where that bug is
BUGS = {
    "BakedConstant": 'h = jnp.tanh(x @ params["w1"] + NOISE)',
    "JitInLoop": "grad_fn = jax.jit(jax.value_and_grad(loss_fn))",
    "DeviceToHost": 'print("loss", loss.item())',
    "HostToDevice": "lambda p, g: p - 0.1 * g",
}


def line_of(text: str) -> int:
    (hit,) = [i + 1 for i, line in enumerate(EXAMPLE.read_text().splitlines()) if text in line]
    return hit


def dynamic_avals() -> list[str]:
    """Each argument's leaves as ``f32[8,16]`` from plain ``args_info`` of the inner jit."""
    ns: dict[str, Any] = {"__name__": "example"}
    exec(compile(EXAMPLE.read_text(), str(EXAMPLE), "exec"), ns)
    traced = jax.jit(jax.value_and_grad(ns["loss_fn"])).trace(*ns["args"])
    out = []
    for arg in traced.args_info[0]:
        leaves = jax.tree.leaves(arg)
        out.append(
            ", ".join(
                f"{x.dtype.kind}{x.dtype.itemsize * 8}[{','.join(map(str, x.shape))}]"
                for x in leaves
            )
        )
    return out


def test_review_shows_each_finding_at_its_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The page is answered with the default example's recorded run (its golden, which
    exhibits/test_goldens.py compares with a live run and exhibits/review/test_review.py with
    the probe's stream; e2e/replay.py): this test is about what the page shows of it, and the
    tests below drive a real worker from the page (the run took ~8 s of this test's 11)."""
    page.set_viewport_size({"width": 1500, "height": 1100})
    answered = replay_runs(page, "review", EXHIBITS["review"].default_example)
    open_exhibit(page, "review")
    set_theme(page, "light")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert len(answered) == 1, answered

    findings = page.get_by_test_id("finding")
    expect(findings).to_have_count(len(BUGS))
    shown = {
        findings.nth(i).get_attribute("data-kind"): int(
            findings.nth(i).get_attribute("data-line") or 0
        )
        for i in range(len(BUGS))
    }
    assert shown == {kind: line_of(text) for kind, text in BUGS.items()}
    for i in range(len(BUGS)):
        expect(findings.nth(i).get_by_test_id("finding-fix")).to_contain_text("Fix:")

    expect(page.get_by_test_id("executables-per-step")).to_have_text("5 executables per step")
    expect(page.get_by_test_id("step-executables")).to_have_text(["5", "5"])

    rows = page.get_by_test_id("arg-row")
    expect(rows).to_have_count(3)
    for i, avals in enumerate(dynamic_avals()):
        expect(rows.nth(i)).to_have_attribute("data-static", "false")
        expect(rows.nth(i)).to_contain_text(avals)
    shoot_both_themes(page, screenshots, "review", full_page=True)
    page.get_by_test_id("review-args").scroll_into_view_if_needed()
    shoot_both_themes(page, screenshots, "review-args", full_page=True)
    assert console_errors == []


def test_review_shows_a_tracer_error_and_a_clean_step(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """loss_branch: JAX's TracerBoolConversionError is the one finding, at the `if` line (what
    plain ``f(*args)`` raises there); mlp_step_fixed: no finding, one executable per step."""
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "review")
    examples = EXHIBITS["review"].example_paths()
    branch = examples["loss_branch"].read_text()
    set_code(page, branch)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    finding = page.get_by_test_id("finding")
    expect(finding).to_have_count(1)
    expect(finding).to_have_attribute("data-kind", "TracerBoolConversion")
    (line,) = [i + 1 for i, t in enumerate(branch.splitlines()) if "if loss > 1.0:" in t]
    expect(finding).to_have_attribute("data-line", str(line))
    expect(finding).to_contain_text("TracerBoolConversionError")
    expect(page.get_by_test_id("no-steps")).to_be_visible()
    page.screenshot(path=str(screenshots / "review-tracer-error.png"), full_page=True)

    set_code(page, examples["mlp_step_fixed"].read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("no-findings")).to_be_visible()
    expect(page.get_by_test_id("executables-per-step")).to_have_text("1 executable per step")
    expect(page.get_by_test_id("arg-row").last).to_have_attribute("data-static", "true")
    page.screenshot(path=str(screenshots / "review-fixed.png"), full_page=True)
    assert console_errors == []


def test_review_of_a_step_that_raises_says_it_failed(page: Page, console_errors: list[str]) -> None:
    """A step that raises (a NameError at line 6): the error panel names the line, and the
    findings say the run failed, not that the step is still running."""
    open_exhibit(page, "review")
    code = (
        "import jax.numpy as jnp\n\n\ndef f(x):\n    y = jnp.sin(x)\n"
        "    return y + undefined_name\n\n\nargs = (jnp.ones(3),)\n"
    )
    set_code(page, code)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    expect(page.get_by_test_id("error-line")).to_contain_text("line 6")
    expect(page.get_by_test_id("review-failed")).to_be_visible()
    expect(page.get_by_test_id("review-findings")).not_to_contain_text("still running")
    expect(page.get_by_test_id("no-steps")).to_have_text(
        "No step finished: f raised before a step could finish."
    )
    assert console_errors == []
