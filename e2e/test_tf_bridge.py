"""The tf_bridge exhibit in real Chromium: the default example runs in a TensorFlow worker; the
page shows the concrete function's graph with its XlaCallModule op, the op's module the same
bytes as jax.export's (the sha256 the truth test checks), TensorFlow's Sout with -1 for the
symbolic batch, and tf2jax's eqns beside their ops. Screenshots in the light and dark themes.
Skipped where the TensorFlow venv is missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jaxscope.sandbox.kinds import kind_problem
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, set_theme, shoot_both_themes

pytestmark = pytest.mark.skipif(kind_problem("tf") is not None, reason=str(kind_problem("tf")))

# A fresh TensorFlow worker imports TensorFlow (6-20 s on a loaded 2-core box) before f runs.
TF_RUN_TIMEOUT_MS = 180_000


def test_tf_bridge_graph_module_and_eqns(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "tf_bridge")
    set_theme(page, "light")
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TF_RUN_TIMEOUT_MS
    )
    # the op types' column: one XlaCallModule (other rows name its output as their input)
    types = page.get_by_test_id("tf-op-row").locator("td:nth-child(2)")
    expect(types.filter(has_text=re.compile(r"^XlaCallModule$"))).to_have_count(1)
    expect(page.get_by_test_id("same-as-export")).to_have_text("same bytes as jax.export")
    expect(page.get_by_test_id("xla-call-module")).to_contain_text("[-1, 2]")
    expect(page.get_by_test_id("stablehlo-text")).to_contain_text("@shape_assertion")
    rows = page.get_by_test_id("eqn-op-row")
    expect(rows).to_have_count(4)
    expect(rows.nth(0)).to_contain_text("dot_general")
    expect(rows.nth(0)).to_contain_text("MatMul")
    expect(rows.nth(3)).to_contain_text("Tanh")
    shoot_both_themes(page, screenshots, "tf_bridge", full_page=True)
    assert console_errors == []
