"""The dynamo_bridge exhibit (PyTorch/XLA track) in real Chromium: the default example runs in a
torch worker; f is one XLA program under its graph hash, call 0 compiles and calls 1-2 replay
the same hash; the item_break example shows two programs with the .item() line on the host
between them, and clicking the host row shows that line. Screenshots in the light and dark
themes. Skipped where the torch venv is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxscope.sandbox.kinds import kind_problem
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, set_theme, shoot_both_themes

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


def test_dynamo_bridge_compiles_once_replays_and_splits_at_a_graph_break(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "dynamo_bridge")
    set_theme(page, "light")
    run(page)
    expect(page.get_by_test_id("dynamo-summary")).to_have_text(
        "1 FX graph, 0 graph breaks, 1 XLA program, 0 host regions"
    )
    expect(page.get_by_test_id("dynamo-region-xla")).to_have_count(1)
    calls = page.get_by_test_id("dynamo-call")
    expect(calls).to_have_count(3)
    expect(calls.nth(0)).to_contain_text("compiled")
    expect(calls.nth(1)).to_contain_text("replayed")
    expect(calls.nth(2)).to_contain_text("replayed")
    hash_text = page.get_by_test_id("dynamo-region-hash").inner_text()
    assert hash_text.startswith("hash ") and len(hash_text) == len("hash ") + 32
    expect(calls.nth(2)).to_contain_text(hash_text[5:13])
    expect(page.get_by_test_id("dynamo-fx-0")).to_contain_text("sin = torch.sin(l_a_)")
    expect(page.get_by_test_id("dynamo-region-code")).to_contain_text("torch.ops.aten.sin.default")
    shoot_both_themes(page, screenshots, "dynamo_bridge-sin_cos", full_page=True)

    page.get_by_test_id("example-select").select_option("item_break")
    run(page)
    expect(page.get_by_test_id("dynamo-summary")).to_have_text(
        "2 FX graphs, 1 graph break, 2 XLA programs, 1 host region"
    )
    expect(page.get_by_test_id("dynamo-region-xla")).to_have_count(2)
    host = page.get_by_test_id("dynamo-region-host")
    expect(host).to_contain_text("line 10")
    host.click()
    expect(page.get_by_test_id("dynamo-region-code")).to_contain_text("peak = h.max().item()")
    expect(page.get_by_test_id("dynamo-fx-1")).to_contain_text("torch_dynamo_resume_in_f_at_")
    shoot_both_themes(page, screenshots, "dynamo_bridge-item_break", full_page=True)
    assert console_errors == []
