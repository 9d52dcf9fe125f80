"""The pjrt_registry exhibit (PyTorch/XLA track) in real Chromium: the default example (FOO,
dynamic plugins on) fails in GetPjRtPlugin with torch_xla's own text and the view marks lines
49-59 of pjrt_registry.cpp; switching dynamic plugins off reruns in a fresh worker and lands in
the chain's last `else` (163-166). Screenshots in the light and dark themes. Skipped where the
torch venv is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxscope.sandbox.kinds import kind_problem
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, set_theme, shoot_both_themes

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# A fresh torch worker imports torch and torch_xla (5-15 s on a loaded 2-core box) first.
TORCH_RUN_TIMEOUT_MS = 120_000
MISS = (
    "RuntimeError: No PjRtPlugin registered for: FOO. Make sure the environment variable "
    "PJRT_DEVICE is set to a correct device name."
)


def test_pjrt_registry_marks_the_branch(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "pjrt_registry")
    set_theme(page, "light")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )
    expect(page.get_by_test_id("pjrt-error")).to_contain_text(MISS)
    expect(page.get_by_test_id("pjrt-branch")).to_have_attribute(
        "data-branch", "plugin not registered"
    )
    expect(page.get_by_test_id("pjrt-sticky")).to_contain_text("the same error again")
    # The run bar names the string tried, not the torch worker's own PJRT_DEVICE=CPU.
    expect(page.get_by_test_id("run-info")).to_have_text("torch_xla 2.9.0 · tried PJRT_DEVICE=FOO")
    marked = page.locator('[data-testid="pjrt-source"] [data-mark="branch"]')
    expect(marked).to_have_count(11)
    expect(marked.first).to_contain_text("49")
    expect(page.locator('[data-testid="pjrt-source"] [data-mark="condition"]')).to_have_count(2)
    shoot_both_themes(page, screenshots, "pjrt_registry", full_page=True)
    page.get_by_test_id("pjrt-dynamic").select_option("off")
    expect(page.get_by_test_id("pjrt-branch")).to_have_attribute(
        "data-branch", "unknown", timeout=TORCH_RUN_TIMEOUT_MS
    )
    expect(page.get_by_test_id("pjrt-error")).to_have_text(
        "RuntimeError: Unknown PJRT_DEVICE: 'FOO'"
    )
    expect(page.get_by_test_id("pjrt-env")).to_contain_text("PJRT_DYNAMIC_PLUGINS")
    page.screenshot(path=str(screenshots / "pjrt_registry-off.png"), full_page=True)
    assert console_errors == []
