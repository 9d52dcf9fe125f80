"""Two findings of the real-program review, in real Chromium against a real `jaxscope serve`:
the transpose walk of the loop (at 1,000 iterations: 4,001 eqns; 550 in `make test`) says it
stops at MAX_STEP_EVENTS (the badge's "of N" and a note), and the NaN finder's table on the NNX
Adam step keeps its cotangents once the run ended (each row shown asks for its step's values;
"(loading…)" until they come)."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest
from jaxscope.sandbox.snippet import load_snippet
from playwright.sync_api import Page, expect

from e2e.browser import run_real
from e2e.real_loop import real_loop

# One test process runs every real-program test, one after another (docs/design/0049-test-time.md).
pytestmark = pytest.mark.xdist_group("real_programs")

ROOT = Path(__file__).resolve().parent.parent
# past the walk's cap of 2,000 steps at a fifth of the 20k loop's cost (design 0049)
LOOP = real_loop(1_000)
ADAM = (ROOT / "examples" / "real" / "nnx_adam_step.py").read_text()


# `make test` runs the loop at 550 iterations: its linear jaxpr still past the cap.
@pytest.mark.parametrize(
    "loop", [real_loop(550), pytest.param(LOOP, marks=pytest.mark.full)], ids=["550", "1000"]
)
def test_the_transpose_walk_of_a_4000_eqn_loop_says_where_it_stops(
    page: Page, console_errors: list[str], screenshots: Path, loop: str
) -> None:
    from exhibits.transpose.probe import MAX_STEP_EVENTS as cap

    snippet = load_snippet(loop)
    # JAX's linear jaxpr of the loop: one walk step per eqn
    _, f_lin = jax.linearize(snippet.f, *snippet.args)
    total = len(jax.make_jaxpr(f_lin)(*snippet.args).jaxpr.eqns)
    assert total > cap
    run_real(page, "transpose", loop, timeout=240_000)
    expect(page.get_by_test_id("tw-step-count")).to_have_text(
        f"step {cap:,} / {cap:,} of {total:,}"
    )
    expect(page.get_by_test_id("tw-step-cap")).to_have_text(
        f"The backward pass has {total:,} steps; the stepper shows the first {cap:,} "
        f"({total - cap:,} not sent). The linear jaxpr and the gradient checked below are the "
        "whole walk's."
    )
    page.get_by_test_id("tw-step-cap").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "real-loop-transpose-step-cap.png"))
    assert console_errors == []


def test_the_nan_finder_table_keeps_its_cotangents_after_the_run(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    run_real(page, "nan_finder", ADAM, timeout=300_000)
    table = page.get_by_test_id("walk-table")
    rows = table.locator("tbody tr:not(.spacer)")
    expect(rows.first).to_be_visible()
    n = rows.count()
    assert n > 20, n
    # every row drawn shows what it wrote once its detail came: no empty cell, no placeholder
    for i in range(n):
        wrote = rows.nth(i).locator("td").nth(4)
        expect(wrote).not_to_have_text("", timeout=30_000)
        expect(wrote).not_to_contain_text("loading", timeout=30_000)
        text = wrote.inner_text().strip()
        # "—" (nothing written) or "var ← value" writes, each with its value after the arrow
        writes = [] if text == "—" else text.split("; ")
        for w in writes:
            assert ("←" in w or "+=" in w) and not w.endswith(("←", "+=")), (i, text)
    page.screenshot(path=str(screenshots / "real-nnx-adam-nan-table.png"))
    assert console_errors == []
