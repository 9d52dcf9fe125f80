"""The transpose exhibit in real Chromium: step forward and back through the backward pass of
``sin(x) * x``; the accumulation step shows the previous value, the contribution and the running
sum, checked here against JAX; a traced fori_loop bound shows jit failing beside eager working.
Screenshots go to ``e2e/screenshots/`` (looked at, not pixel baselines)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.internals.views import preview_value
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from e2e.replay import replay_runs
from exhibits.registry import EXHIBITS

EXAMPLES = EXHIBITS["transpose"].example_paths()
SIN_TIMES_X = EXAMPLES["sin_times_x"].read_text()


def card_step(page: Page) -> str | None:
    card = page.get_by_test_id("tw-card")
    return card.get_attribute("data-step") if card.count() else None


def go_to_step(page: Page, step: int) -> None:
    """From the first event, step forward until the card shows walk step ``step``."""
    page.get_by_test_id("stepper-first").click()
    for _ in range(40):
        if card_step(page) == str(step):
            return
        page.get_by_test_id("stepper-next").click()
    pytest.fail(f"never reached step {step}")


def test_step_through_the_walk_and_see_an_accumulation(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "transpose")
    set_theme(page, "light")
    set_code(page, SIN_TIMES_X)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    total = page.get_by_test_id("tw-step-count").inner_text().split("/")[-1].strip()
    assert int(total) >= 2

    # Step forward: step 0 is the last eqn of the linear jaxpr, highlighted there.
    go_to_step(page, 0)
    expect(page.get_by_test_id("tw-step-count")).to_have_text(f"step 1 / {total}")
    # The badge, the card and the table count the same step from 1 (the event's `step` is 0).
    expect(page.get_by_test_id("tw-card")).to_contain_text("step 1, eqn")
    expect(page.get_by_test_id("tw-step-0").locator("td").first).to_have_text("1")
    page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("tw-card")).to_have_attribute("data-step", "1")
    expect(page.get_by_test_id("tw-step-1")).to_be_visible()
    # ... and back.
    page.get_by_test_id("stepper-prev").click()
    expect(page.get_by_test_id("tw-card")).to_have_attribute("data-step", "0")
    expect(page.get_by_test_id("tw-step-1")).to_have_count(0)

    # The accumulation into x's cotangent: previous + contribution = running = jax.grad.
    if page.get_by_test_id("stepper-last").is_enabled():
        page.get_by_test_id("stepper-last").click()
    acc = page.locator("[data-mode='accumulate']")
    if acc.count() == 0:  # the last step is not the accumulating one: jump to it
        page.get_by_test_id("tw-jump-accumulation").click()
    acc = page.locator("[data-mode='accumulate']").first
    expect(acc).to_be_visible()
    index = acc.get_attribute("data-testid")
    assert index is not None
    prefix = index  # tw-write-<i>
    expect(page.get_by_test_id(f"{prefix}-mode")).to_have_text("accumulate")
    previous = page.get_by_test_id(f"{prefix}-previous").inner_text()
    contribution = page.get_by_test_id(f"{prefix}-contribution").inner_text()
    running = page.get_by_test_id(f"{prefix}-running").inner_text()
    x = jnp.float32(1.0)  # the contributions are sin(x) and cos(x) * 1 as JAX computes them
    # Shown as numpy prints these float32 values (0.841471, 0.540302: float32 digits, never
    # float64 ones), the sum as numpy prints jax.grad's value.
    assert {previous, contribution} == {preview_value(jnp.sin(x)), preview_value(jnp.cos(x) * 1.0)}
    assert running == preview_value(jax.grad(lambda x: jnp.sin(x) * x)(x)) == "1.381773"
    assert float(running) == pytest.approx(float(previous) + float(contribution), abs=1e-6)
    # The args show a residual and an UndefinedPrimal.
    roles = page.get_by_test_id("tw-args").locator("[data-testid$='-role']").all_inner_texts()
    assert sorted(roles) == ["UndefinedPrimal", "residual"]
    expect(page.get_by_test_id("tw-card-rule-loc")).to_contain_text("jax/_src/")
    # Clicking a step selects its user line in the editor.
    page.get_by_test_id(f"tw-step-{card_step(page)}").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_text("    return jnp.sin(x) * x")
    shoot_both_themes(page, screenshots, "transpose-accumulate")
    page.get_by_test_id("tw-attempts").scroll_into_view_if_needed()
    shoot_both_themes(page, screenshots, "transpose-top")

    if page.get_by_test_id("stepper-last").is_enabled():
        page.get_by_test_id("stepper-last").click()
    expect(page.get_by_test_id("tw-equal")).to_have_text("bit-identical to jax.grad and jax.vjp")
    page.get_by_test_id("tw-check").scroll_into_view_if_needed()
    shoot_both_themes(page, screenshots, "transpose-check")
    assert console_errors == []


def test_jit_fails_where_eager_works(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "transpose")
    set_code(page, EXAMPLES["fori_loop_bounds"].read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("tw-attempt-jit-outcome")).to_have_text("fails")
    expect(page.get_by_test_id("tw-attempt-eager-outcome")).to_have_text("works")
    expect(page.get_by_test_id("tw-attempt-jit")).to_contain_text("Reverse-mode differentiation")
    expect(page.get_by_test_id("tw-attempts-note")).to_contain_text("abstract tracer")
    expect(page.get_by_test_id("tw-gradient-0:0")).to_contain_text("12")
    page.screenshot(path=str(screenshots / "transpose-jit-vs-eager.png"), full_page=True)
    assert console_errors == []


def test_default_example_walks_mlp_loss(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    answered = replay_runs(page, "transpose", "mlp_loss")
    open_exhibit(page, "transpose")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert len(answered) == 1, answered
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    expect(page.get_by_test_id("tw-equal")).to_have_text("bit-identical to jax.grad and jax.vjp")
    expect(page.get_by_test_id("tw-max-rel")).to_have_text(re.compile(r"^[0-9.e+-]+$"))
    rel = float(page.get_by_test_id("tw-max-rel").inner_text())
    assert rel < 1e-6
    page.screenshot(path=str(screenshots / "transpose-mlp_loss.png"), full_page=True)

    # one row per leaf, named by its key path, its values jax.grad's computed here
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(EXAMPLES["mlp_loss"].read_text(), ns)
    g_params, g_x = jax.grad(ns["f"], argnums=(0, 1))(*ns["args"])
    expected = {f"args[0]['{k}']": g_params[k] for k in sorted(g_params)} | {"args[1]": g_x}
    rows = page.get_by_test_id("tw-gradient").locator("tbody tr")
    # The leaves' values are details the page asks for after run_finished: wait until every row
    # has them (a loaded machine answers later than the reads below would look).
    expect(rows).to_have_count(len(expected) + 1)
    expect(page.get_by_test_id("tw-gradient")).not_to_contain_text("loading")
    paths = [rows.nth(i).get_attribute("data-path") for i in range(rows.count())]
    assert paths == [*expected, "args[2]"]
    expect(rows.nth(5)).to_contain_text("not differentiated")
    for j, (path, g) in enumerate(expected.items()):
        key = f"{0 if j < 4 else 1}:{j if j < 4 else 0}"
        expect(page.get_by_test_id(f"tw-gradient-{key}-path")).to_have_text(path)
        for col in ("walk", "grad"):
            # float32 columns: each number as the walk prints it (preview_value of the float32)
            text = page.get_by_test_id(f"tw-gradient-{key}-{col}").inner_text()
            numbers = text.replace("\n", "").replace("[", "").replace("]", "").split(", ")
            assert numbers == [preview_value(np.float32(v)) for v in np.asarray(g).ravel()]
        text = page.get_by_test_id(f"tw-gradient-{key}-fd").inner_text()  # float64, 7 digits
        shown = np.array(json.loads(text.replace("\n", "")), dtype=float)
        np.testing.assert_allclose(shown, np.asarray(g, np.float64), rtol=1e-6, atol=1e-9)
    # no number is wrapped mid-way: each one lies on a single line box
    cut = page.get_by_test_id("tw-gradient").evaluate(
        """table => {
          const out = [];
          for (const pre of table.querySelectorAll('pre.num')) {
            const node = pre.firstChild;
            if (!node) continue;
            for (const m of node.textContent.matchAll(/-?[0-9][0-9.e+-]*/g)) {
              const r = document.createRange();
              r.setStart(node, m.index);
              r.setEnd(node, m.index + m[0].length);
              if (r.getClientRects().length > 1) out.push(m[0]);
            }
          }
          return out;
        }"""
    )
    assert cut == []
    page.get_by_test_id("tw-check").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "transpose-check-mlp_loss.png"))
    assert console_errors == []


def test_a_scan_step_shows_its_iterations_inside(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    # The inner walks themselves are held against JAX in exhibits/transpose/test_transpose.py and
    # backend/tests/test_internals_contract_transpose.py; here: the user can open them.
    open_exhibit(page, "transpose")
    page.get_by_test_id("example-select").select_option("scan_power")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    scan_row = page.locator('[data-testid^="tw-step-"]').filter(has_text="scan").first
    scan_row.click()
    expect(page.get_by_test_id("tw-card-primitive")).to_have_text("scan")
    expect(page.get_by_test_id("tw-inside-sentence")).to_contain_text("last iteration first")
    first = page.get_by_test_id("tw-inside-0")
    expect(first).to_contain_text("iteration 2")
    expect(first.locator("tr")).not_to_have_count(0)
    expect(page.get_by_test_id("tw-inside-2")).to_contain_text("iteration 0")
    page.get_by_test_id("tw-inside-sentence").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "transpose-inside-scan.png"))
    assert console_errors == []


def test_no_transpose_rule_walks_up_to_the_eqn_and_says_so_once(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """jax.grad raises in its backward pass: the linear jaxpr and the walk up to `double` are
    shown (then the attempts), `double`'s step is marked, JAX's message is in the error panel
    (the attempt cards do not repeat it), and the panel says where: while transposing double."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "transpose")
    set_code(page, EXAMPLES["no_transpose_rule"].read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    expect(page.get_by_test_id("jaxpr-text")).to_contain_text("double")
    expect(page.get_by_test_id("tw-step-count")).to_have_text("step 2 / 2")
    expect(page.get_by_test_id("tw-step-0")).to_contain_text("reduce_sum")
    expect(page.get_by_test_id("tw-step-1")).to_contain_text("raised NotImplementedError")
    expect(page.get_by_test_id("tw-card")).to_have_attribute("data-step", "1")
    expect(page.get_by_test_id("tw-card-failure-headline")).to_have_text(
        "no transpose rule for double"
    )
    expect(page.get_by_test_id("tw-failed")).to_contain_text("no transpose rule for double")
    message = "Transpose rule (for reverse-mode differentiation) for 'double' not implemented"
    expect(page.get_by_test_id("tw-card-error")).to_contain_text(message)
    for mode in ("jit", "eager"):
        expect(page.get_by_test_id(f"tw-attempt-{mode}-same")).to_contain_text("error panel")
        expect(page.get_by_test_id(f"tw-attempt-{mode}")).not_to_contain_text(message)
    expect(page.get_by_test_id("error-during")).to_have_text(
        "while transposing double (the backward pass of jax.grad)"
    )
    expect(page.get_by_test_id("error-message")).to_contain_text(message)
    assert page.get_by_text("Run a snippet to see its linear jaxpr").count() == 0
    # The failing step's values came with the failed run (its worker is stopped: the runner sends
    # the run's held whole events before run_failed): double's cotangent from reduce_sum, ones.
    expect(page.get_by_test_id("tw-cts-in")).to_contain_text("[1., 1., 1.]")
    expect(page.get_by_test_id("tw-cts-in")).not_to_contain_text("loading")
    page.screenshot(path=str(screenshots / "transpose-no-transpose-rule.png"))
    # Back past the attempts (sent after the failing step: the walk is live, design 0083) to the
    # failing step: the attempts are still to come there, the step is marked.
    for _ in range(3):
        page.get_by_test_id("stepper-prev").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("transpose_stepped")
    expect(page.get_by_test_id("tw-card")).to_have_attribute("data-step", "1")
    expect(page.get_by_test_id("tw-attempts-later")).to_contain_text(
        "(not yet at this point of the run)"
    )
    expect(page.get_by_test_id("tw-failed")).to_contain_text("no transpose rule for double")
    # One step back: the step before, reduce_sum, as JAX ran it.
    page.get_by_test_id("stepper-prev").click()
    expect(page.get_by_test_id("tw-card")).to_have_attribute("data-step", "0")
    expect(page.get_by_test_id("tw-card-primitive")).to_have_text("reduce_sum")
    assert page.get_by_test_id("tw-card-failure").count() == 0
    # Before its step the failure is not shown (issue 18 item 9f): no hint, no "same" cards.
    expect(page.get_by_test_id("tw-failed")).to_have_count(0)
    expect(page.get_by_test_id("tw-attempt-jit-same")).to_have_count(0)
    assert console_errors == []


def test_stepping_back_hides_what_comes_later(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """At the first event of a run the attempts and the linear jaxpr have not arrived: the view
    says they are "(not yet at this point of the run)" instead of showing them (issue 18 item
    9f); stepping forward past their events shows them: the linear jaxpr first, the attempts
    after the steps (the summary first, issue 36)."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "transpose")
    set_code(page, SIN_TIMES_X)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("tw-attempt-jit")).to_be_visible()
    page.get_by_test_id("stepper-first").click()
    expect(page.get_by_test_id("tw-attempts-later")).to_contain_text(
        "(not yet at this point of the run)"
    )
    expect(page.get_by_test_id("tw-linear-later")).to_contain_text(
        "(not yet at this point of the run)"
    )
    expect(page.get_by_test_id("tw-attempt-jit")).to_have_count(0)
    expect(page.get_by_test_id("lin-eqn-0")).to_have_count(0)
    page.screenshot(path=str(screenshots / "transpose-not-yet.png"))
    for _ in range(40):
        if page.get_by_test_id("stepper-event-type").inner_text() == "linear_jaxpr_staged":
            break
        page.get_by_test_id("stepper-next").click()
    # The summary first (issue 36): the linear jaxpr and the steps before the attempts.
    expect(page.get_by_test_id("tw-linear-later")).to_have_count(0)
    expect(page.get_by_test_id("lin-eqn-0")).to_be_visible()
    expect(page.get_by_test_id("tw-attempts-later")).to_contain_text(
        "(not yet at this point of the run)"
    )
    for _ in range(40):
        if page.get_by_test_id("stepper-event-type").inner_text() == "grad_attempted":
            break
        page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("tw-attempt-jit")).to_be_visible()
    expect(page.get_by_test_id("tw-attempts-later")).to_have_count(0)
    assert console_errors == []


def test_c22_fd_check_compares_the_finite_entries_and_lists_the_nans(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """C22 broken: the gradient is [nan, nan, 0.25]. The check leads with its verdict: the NaN
    where the finite difference is 0 (index 0) disagrees, named first; the NaN at the kink
    (index 1) is left out and listed; the error figures cover the one finite entry (against
    numpy's central difference of sqrt at 4)."""
    case = Path(__file__).resolve().parents[1] / "cases" / "C22_where_sqrt_broken.py"
    open_exhibit(page, "transpose")
    set_code(page, case.read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("tw-fd-compared")).to_have_text("over 1 compared entry")
    h = 1e-6
    fd_np = (np.sqrt(4.0 + h) - np.sqrt(4.0 - h)) / (2 * h)
    abs_err = float(page.get_by_test_id("tw-max-abs").inner_text())
    assert abs_err < 1e-8 and abs(fd_np - 0.25) < 1e-8
    # the verdict first: a disagreement, naming args[0][0]
    expect(page.get_by_test_id("tw-verdict")).to_have_attribute("data-verdict", "disagree")
    expect(page.get_by_test_id("tw-headline")).to_contain_text(
        "first at args[0][0]: the gradient is nan where the finite difference is 0.0"
    )
    expect(page.get_by_test_id("tw-fd-disagree-count")).to_have_text("1")
    disagree = page.get_by_test_id("tw-fd-disagree-0")
    expect(disagree).to_contain_text("args[0][0]")
    expect(disagree).to_contain_text("nan")
    expect(page.get_by_test_id("tw-gradient-0:0")).to_have_class(re.compile("disagrees"))
    # the kink at 0, left out and said
    expect(page.get_by_test_id("tw-fd-skipped-count")).to_have_text("1")
    row0 = page.get_by_test_id("tw-fd-skipped-0")
    expect(row0).to_contain_text("args[0][1]")
    expect(row0).to_contain_text("kink")
    expect(row0).to_contain_text("a kink: the one-sided differences disagree")
    expect(row0).to_contain_text("the gradient is nan")
    expect(row0).not_to_contain_text("null")
    # the main table: no raw null, a dash with a title
    fd_cell = page.get_by_test_id("tw-gradient-0:0-fd")
    expect(fd_cell).to_have_text("[0, —, 0.25]")
    expect(fd_cell).to_have_attribute("title", re.compile("kink"))
    grad = np.asarray(
        jax.grad(lambda x: jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0)))(jnp.array([-1.0, 0.0, 4.0]))
    )
    assert np.isnan(grad[:2]).all() and grad[2] == 0.25
    page.get_by_test_id("tw-check").screenshot(path=str(screenshots / "transpose-c22-fd-check.png"))
    assert console_errors == []


def test_a_checkpoint_step_opens_to_its_body(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    # The body walk is held against JAX in exhibits/transpose/test_checkpoint.py.
    from exhibits.transpose.test_checkpoint import SOURCE

    open_exhibit(page, "transpose")
    set_code(page, SOURCE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    row = page.locator('[data-testid^="tw-step-"]').filter(has_text="remat2").first
    row.click()
    expect(page.get_by_test_id("tw-card-primitive")).to_have_text("remat2")
    expect(page.get_by_test_id("tw-inside-sentence")).to_contain_text(
        "jax.checkpoint's transpose (remat2) recomputes g's forward values"
    )
    inner = page.get_by_test_id("tw-inside-0")
    expect(inner).to_contain_text("the body of jax.checkpoint(g)")
    expect(inner.locator("tr")).not_to_have_count(0)
    page.get_by_test_id("tw-inside-sentence").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "transpose-inside-checkpoint.png"))
    assert console_errors == []


def test_nan_inputs_list_the_nan_finite_differences(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """f = sum(2x) at x = [nan, nan]: the gradient is 2 (jax.grad), the finite differences are
    NaN (f is NaN around the point, no kink): both entries listed with the reason."""
    open_exhibit(page, "transpose")
    set_code(
        page,
        "import jax.numpy as jnp\n\n\ndef f(x):\n    return jnp.sum(2 * x)\n\n\n"
        "args = (jnp.array([jnp.nan, jnp.nan]),)\n",
    )
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    grad = np.asarray(jax.grad(lambda x: jnp.sum(2 * x))(jnp.array([jnp.nan, jnp.nan])))
    assert grad.tolist() == [2.0, 2.0]
    expect(page.get_by_test_id("tw-gradient-0:0-walk")).to_have_text("[2.0, 2.0]")
    expect(page.get_by_test_id("tw-gradient-0:0-fd")).to_have_text("[nan, nan]")
    expect(page.get_by_test_id("tw-fd-skipped-count")).to_have_text("2")
    expect(page.get_by_test_id("tw-fd-skipped-0")).to_contain_text("the finite difference is nan")
    page.get_by_test_id("tw-check").screenshot(path=str(screenshots / "transpose-nan-inputs.png"))
    assert console_errors == []
