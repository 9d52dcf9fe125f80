"""The lazy_tensor exhibit (PyTorch/XLA track) in real Chromium: the default example runs in a
torch worker; the steps table has one row per line of ``f`` with the ``.item()`` line the only
cut (named by its call), clicking a step shows its pending IR, and the graph hash, the hash
experiments and the hash's ingredients from torch_xla's source are shown; the eager-mode switch
reruns with a cut on every line. Screenshots in the light and dark themes. Skipped where the
torch venv is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxscope.sandbox.kinds import kind_problem, torch_python
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, set_theme, shoot_both_themes
from e2e.replay import replay_runs
from exhibits.registry import EXHIBITS

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

EXAMPLE = EXHIBITS["lazy_tensor"].example_paths()[EXHIBITS["lazy_tensor"].default_example]
# A fresh torch worker imports torch and torch_xla (5-15 s on a loaded 2-core box) before f runs.
TORCH_RUN_TIMEOUT_MS = 120_000


def test_lazy_tensor_shows_the_steps_and_the_cut(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    # The page is answered with the default example's recorded run (its golden; e2e/replay.py):
    # what the page shows of it; the tests below drive a real torch worker from the page.
    page.set_viewport_size({"width": 1500, "height": 1300})
    answered = replay_runs(page, "lazy_tensor", EXHIBITS["lazy_tensor"].default_example)
    open_exhibit(page, "lazy_tensor")
    set_theme(page, "light")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )
    assert len(answered) == 1, answered
    source = EXAMPLE.read_text().splitlines()
    body = [
        t.strip() for t in source[source.index("def f(x, w1, w2):") + 1 : source.index("args = (")]
    ]
    body = [t for t in body if t]
    steps = page.get_by_test_id("lazy-step")
    expect(steps).to_have_count(len(body))
    cut = page.get_by_test_id("lazy-cut")
    expect(cut).to_have_count(1)
    item = next(t for t in body if ".item()" in t)
    expect(steps.filter(has=cut)).to_contain_text(item)
    expect(page.get_by_test_id("lazy-cut-by")).to_have_text("by .item()")
    steps.first.click()
    expect(page.get_by_test_id("lazy-pending")).to_contain_text("aten::mm")
    expect(page.get_by_test_id("graph-hash")).to_contain_text("hash ")
    expect(page.get_by_test_id("hash-trial")).to_have_count(2)
    expect(page.get_by_test_id("hash-ingredient")).to_have_count(6)
    expect(page.get_by_test_id("lazy-hash-source")).to_contain_text("MergeHash(")
    expect(page.get_by_test_id("run-info")).to_contain_text("torch_xla 2.9.0")
    shoot_both_themes(page, screenshots, "lazy_tensor", full_page=True)
    assert console_errors == []


def test_lazy_tensor_eager_mode_cuts_every_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "lazy_tensor")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )
    expect(page.get_by_test_id("lazy-cut")).to_have_count(1)
    page.get_by_test_id("lazy-eager").check()
    steps = page.get_by_test_id("lazy-step")
    # Every line of f runs its ops at once: a run on each row, none named by a call.
    expect(page.get_by_test_id("lazy-cut")).to_have_count(
        steps.count(), timeout=TORCH_RUN_TIMEOUT_MS
    )
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )
    expect(page.get_by_test_id("lazy-cut-by")).to_have_count(0)
    expect(page.get_by_test_id("lazy-cut-ops").first).to_contain_text("run eagerly")
    expect(page.get_by_test_id("lazy-eager")).to_be_checked()
    page.screenshot(path=str(screenshots / "lazy_tensor-eager.png"), full_page=True)
    assert console_errors == []


TORCHAX_SITE = Path(torch_python()).parent.parent / "torchax-site"


@pytest.mark.skipif(
    not (TORCHAX_SITE / "torchax").is_dir(),
    reason=f"torchax is not installed ({TORCHAX_SITE}: `make torch` installs it)",
)
def test_lazy_tensor_torchax_beside_torch_xla(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "lazy_tensor")
    page.get_by_test_id("example-select").select_option("no_cuts")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )
    expect(page.get_by_test_id("lazy-torchax-panel")).to_have_count(0)
    page.get_by_test_id("lazy-torchax").check()
    panel = page.get_by_test_id("lazy-torchax-panel")
    expect(panel).to_contain_text("torchax 0.0.13 on JAX 0.10.2", timeout=TORCH_RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("torchax-jaxpr")).to_contain_text("dot_general")
    expect(page.get_by_test_id("torchax-stablehlo")).to_contain_text("stablehlo.dot_general")
    expect(page.get_by_test_id("torchax-hlo")).to_contain_text("HloModule")
    page.get_by_test_id("lazy-torchax-panel").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "lazy_tensor-torchax.png"))
    assert console_errors == []


@pytest.mark.skipif(
    not (TORCHAX_SITE / "torchax").is_dir(),
    reason=f"torchax is not installed ({TORCHAX_SITE}: `make torch` installs it)",
)
def test_lazy_tensor_torchax_module_state_and_a_training_step(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """module_state.py's module-level model: its parameters are the jaxpr's inputs by their
    names, the tensor f reads a constant; train_step.py: what torchax raised, at which line (a
    click selects it in the editor), no jaxpr."""
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "lazy_tensor")
    page.get_by_test_id("example-select").select_option("module_state")
    page.get_by_test_id("lazy-torchax").check()
    page.get_by_test_id("run").click()
    panel = page.get_by_test_id("lazy-torchax-panel")
    expect(panel).to_contain_text("torchax 0.0.13 on JAX 0.10.2", timeout=TORCH_RUN_TIMEOUT_MS)
    rows = page.get_by_test_id("torchax-var")
    expect(rows).to_have_count(7)
    expect(rows.nth(1)).to_contain_text("model.0.weight")
    expect(rows.nth(1)).to_contain_text("f32[8,4]")
    expect(rows.nth(1)).to_contain_text("input: a parameter")
    expect(rows.nth(6)).to_contain_text("scale")
    expect(rows.nth(6)).to_contain_text("constant: a module-level tensor")
    var = rows.nth(1).locator("td").first.inner_text()
    expect(page.get_by_test_id("torchax-jaxpr")).to_contain_text(f"{var}:f32[8,4]")
    expect(page.get_by_test_id("torchax-problem")).to_have_count(0)
    panel.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "lazy_tensor-torchax-module-state.png"), full_page=True)

    page.get_by_test_id("example-select").select_option("train_step")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("lazy-graph")).to_contain_text("hash", timeout=TORCH_RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )
    page.get_by_test_id("lazy-torchax").check()  # a new example may start with the options reset
    problem = page.get_by_test_id("torchax-problem")
    expect(problem).to_contain_text("loss.backward()", timeout=TORCH_RUN_TIMEOUT_MS)
    expect(problem).to_contain_text("RuntimeError: element 0 of tensors does not require grad")
    expect(problem).not_to_contain_text("Traceback")
    expect(page.get_by_test_id("torchax-problem-line")).to_have_text("line 17")
    expect(page.get_by_test_id("torchax-jaxpr")).to_have_count(0)
    page.get_by_test_id("torchax-problem-line").click()
    problem.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "lazy_tensor-torchax-train-step.png"), full_page=True)
    assert console_errors == []
