"""The custom_vjp lab in real Chromium: the wrong-sign example shows the disagreement message and
the per-argument table; the C20 bwd-arity case shows the bwd-structure problem pointing at line
27, and clicking the line selects it in the editor. Screenshots in light and dark themes."""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import jax
import pytest
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait
from exhibits.conftest import CASES


def load_example(page: Page, name: str) -> None:
    page.get_by_test_id("example-select").select_option(name)
    expect(page.get_by_test_id("editor")).to_contain_text("def f(")


def test_wrong_sign_disagreement(page: Page, console_errors: list[str], screenshots: Path) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "custom_vjp")
    load_example(page, "wrong_sign")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    table = page.get_by_test_id("argument-table")
    expect(table).to_be_visible()
    expect(table.get_by_test_id("argument-x").get_by_test_id("badge")).to_have_text("differs")
    expect(table.get_by_test_id("argument-w").get_by_test_id("badge")).to_have_text("pass")
    expect(page.get_by_test_id("verdict")).to_contain_text("differs")
    problem = page.get_by_test_id("problem-differs_autodiff")
    expect(problem).to_contain_text("Your rule disagrees with autodiff by 3.51 on argument x")
    expect(page.get_by_test_id("residuals")).to_contain_text("res")
    page.screenshot(path=str(screenshots / "custom_vjp-wrong-sign.png"), full_page=True)
    page.get_by_test_id("theme-toggle").click()
    page.screenshot(path=str(screenshots / "custom_vjp-wrong-sign-dark.png"), full_page=True)
    assert console_errors == []


def test_c20_bwd_arity_points_at_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    case = json.loads((CASES / "C20_bwd_arity_broken.expect.json").read_text())
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "custom_vjp")
    load_example(page, "c20_bwd_arity_broken")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("no-jaxpr")).to_be_visible()
    problem = page.get_by_test_id("problem-bwd_structure")
    expect(problem).to_contain_text("bwd must return 3 cotangents")
    # JAX's traceback ends at the call in f (case error_user_line 27, said in the problem's
    # explanation); the problem and the grad(f) badge point at bwd's return, the 2 cotangents
    # it returns (line 19).
    source = (CASES / "C20_bwd_arity_broken.py").read_text().splitlines()
    bwd_return = "    return gd * s, jnp.sum(gd * data)  # 2 cotangents for 3 primal arguments"
    assert source.index(bwd_return) + 1 == 19
    expect(page.get_by_test_id("attempts")).to_contain_text(f"{case['error_class']} at line 19")
    expect(problem).to_contain_text(f"JAX's traceback ends at line {case['error_user_line']} (f)")
    line = problem.get_by_test_id("problem-line")
    expect(line).to_have_text("line 19")
    expect(problem.get_by_test_id("problem-error")).to_contain_text(case["error_first_line"])
    line.click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_have_text(bwd_return)
    expect(page.get_by_test_id("problem-int_not_nondiff")).to_contain_text("nondiff_argnums")
    page.screenshot(path=str(screenshots / "custom_vjp-c20-bwd-arity.png"), full_page=True)
    assert console_errors == []


RAISING_BWD = """import jax
import jax.numpy as jnp


@jax.custom_vjp
def g(x):
    return jnp.sin(x)


def fwd(x):
    return jnp.sin(x), x


def bwd(res, ct):
    raise ValueError("my bwd is broken: residual has the wrong shape")


g.defvjp(fwd, bwd)


def f(x):
    return g(x).sum()


args = (jnp.ones(3),)
"""


def test_a_raising_bwd_shows_its_message(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The user's own error text (not only ValueError) under the attempts and in the problem."""
    from e2e.browser import set_code

    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "custom_vjp")
    set_code(page, RAISING_BWD)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    message = "my bwd is broken: residual has the wrong shape"
    expect(page.get_by_test_id("attempt-error-eager")).to_contain_text(f"ValueError: {message}")
    problem = page.get_by_test_id("problem-grad_failed").first
    expect(problem.get_by_test_id("problem-error")).to_contain_text(f"ValueError: {message}")
    problem.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "custom_vjp_raising_bwd.png"))
    assert console_errors == []


def test_c20_int_arg_headline_is_not_green_when_jit_grad_fails(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """c20_int_arg_broken: eager grad agrees with finite differences but jit(grad) fails: the
    headline says so, in the error colour; the problems render `code` spans, no raw backticks."""
    ns = runpy.run_path(str(CASES / "C20_int_arg_broken.py"))
    jax.grad(ns["f"])(*ns["args"])  # the truth: eager grad works in this process...
    with pytest.raises(TypeError):  # ...and jit(grad) raises
        jax.jit(jax.grad(ns["f"]))(*ns["args"])
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "custom_vjp")
    load_example(page, "c20_int_arg_broken")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    verdict = page.get_by_test_id("verdict")
    expect(verdict).to_contain_text("but jax.jit(jax.grad(f)) fails — see the 2 errors below.")
    expect(verdict).to_have_class(re.compile(r"\berror\b"))
    expect(verdict).not_to_have_class(re.compile(r"\bagrees\b"))
    problems = page.get_by_test_id("problems")
    expect(problems.locator(".problem.error")).to_have_count(2)
    assert "`" not in problems.inner_text()
    int_arg = page.get_by_test_id("problem-int_not_nondiff").get_by_test_id("problem-explanation")
    expect(
        int_arg.locator("code", has_text="@partial(jax.custom_vjp, nondiff_argnums=(2,))")
    ).to_have_count(1)
    jit_failed = page.get_by_test_id("problem-jit_failed").get_by_test_id("problem-explanation")
    expect(jit_failed.locator("code", has_text="if")).to_have_count(1)
    page.get_by_test_id("verdict").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "custom_vjp-c20-int-arg.png"), full_page=True)
    assert console_errors == []
