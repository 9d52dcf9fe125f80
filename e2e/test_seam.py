"""The seam exhibit (PyTorch/XLA track) in real Chromium: the default step runs in a torch
worker; the steps table shows three steps, the first compiling; the lanes show step 0's six
crossings (three down, the program down, the run, the loss up); clicking the opt.step() upload
names its PJRT call and selects that line in the editor; step 1 has four crossings. The
item_in_step example shows the compile, run and read at the .item() line. Screenshots in the
light and dark themes. Skipped where the torch venv is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxscope.sandbox.kinds import kind_problem
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, set_theme, shoot_both_themes
from e2e.replay import replay_runs

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# A fresh torch worker imports torch and torch_xla (5-15 s on a loaded 2-core box) before f runs.
TORCH_RUN_TIMEOUT_MS = 120_000


def run(page: Page) -> None:
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )


def test_seam_shows_a_steps_crossings(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "seam")
    set_theme(page, "light")
    run(page)
    expect(page.get_by_test_id("seam-step")).to_have_count(3)
    expect(page.get_by_test_id("seam-summary")).to_contain_text("compiled on step 0")
    arrows = page.get_by_test_id("seam-arrow")
    expect(arrows).to_have_count(6)
    methods = [arrows.nth(i).get_attribute("data-method") for i in range(6)]
    assert methods == [
        "TransferToDevice", "TransferToDevice", "TransferToDevice", "Compile",
        "ExecuteComputation", "TransferFromDevice",
    ]  # fmt: skip
    # The learning rate's upload, at opt.step(): its card and its line in the editor.
    arrows.nth(2).click()
    card = page.get_by_test_id("seam-crossing")
    expect(card).to_contain_text("ComputationClient::TransferToDevice")
    expect(card).to_contain_text("opt.step()")
    expect(page.get_by_test_id("seam-pjrt-call")).to_contain_text(
        "PjRtClient::BufferFromHostBuffer"
    )
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_text("    opt.step()")
    arrows.nth(3).click()
    expect(page.get_by_test_id("seam-pjrt-call")).to_contain_text("PjRtClient::CompileAndLoad")
    expect(card).to_contain_text("PjRtCpuClient::Compile")
    # The compile is the loop's sync: no snippet line, so none stays selected.
    expect(selected).to_have_count(0)
    shoot_both_themes(page, screenshots, "seam-step0", full_page=True)

    page.get_by_test_id("seam-step").nth(1).click()
    expect(arrows).to_have_count(4)
    expect(page.get_by_test_id("seam-row")).to_have_count(4)

    page.get_by_test_id("example-select").select_option("item_in_step")
    run(page)
    page.get_by_test_id("seam-step").nth(0).click()
    rows = page.get_by_test_id("seam-row")
    expect(rows).to_have_count(9)
    expect(rows.filter(has_text="f line 18")).to_have_count(3)
    shoot_both_themes(page, screenshots, "seam-item", full_page=True)
    assert console_errors == []


def test_seam_spmd_example_runs_replicated(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The spmd_batch example (mesh_shape = (4,)): later steps cross as two
    TransferShardsToDevice, each with its TransferToDevice, one ExecuteReplicated and the read.
    The page is answered with the example's recorded run (its golden, which
    exhibits/seam/test_seam.py holds to a fresh torch_xla process's crossings; e2e/replay.py):
    this test is about what the page shows of it, and the test above drives a real torch worker
    from the page (a torch run here took ~8 s of this test's 11)."""
    page.set_viewport_size({"width": 1500, "height": 1300})
    answered = replay_runs(page, "seam", "spmd_batch")
    open_exhibit(page, "seam")
    page.get_by_test_id("example-select").select_option("spmd_batch")
    run(page)
    assert len(answered) == 1, answered
    page.get_by_test_id("seam-step").nth(2).click()
    arrows = page.get_by_test_id("seam-arrow")
    expect(arrows).to_have_count(6)
    methods = [arrows.nth(i).get_attribute("data-method") for i in range(6)]
    assert methods == [
        "TransferShardsToDevice", "TransferToDevice", "TransferShardsToDevice",
        "TransferToDevice", "ExecuteReplicated", "TransferFromDevice",
    ]  # fmt: skip
    arrows.nth(0).click()
    expect(page.get_by_test_id("seam-crossing")).to_contain_text(
        "ComputationClient::TransferShardsToDevice"
    )
    expect(page.get_by_test_id("seam-pjrt-call")).to_contain_text("BufferFromHostBuffer")
    arrows.nth(4).click()
    expect(page.get_by_test_id("seam-pjrt-call")).to_contain_text("PjRtLoadedExecutable::Execute")
    expect(page.get_by_test_id("seam-summary")).to_contain_text("SPMD")
    page.screenshot(path=str(screenshots / "seam-spmd-light.png"), full_page=True)
    assert console_errors == []
