"""The flax_params exhibit in real Chromium: the default example (a linen MLP) lists its six
parameters in call order, each with the key Flax gave it (recomputed here as ``fold_in`` of
``key(0)`` and the SHA-1 of the scope path and counter); stepping back to the second parameter
shows the params tree with two leaves, the newest marked. Then ``branch_silent`` marks
``Dense_2`` as never read, and ``branch_error`` shows Flax's ``ScopeParamShapeError`` at the
shifted layer's line, and ``nnx_mlp`` its counted keys and the split into graphdef and
state. Screenshots in the light and dark themes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import jax
import numpy as np
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, set_code, set_theme, shoot_both_themes
from exhibits.registry import EXHIBITS

PATHS = EXHIBITS["flax_params"].example_paths()
# Importing flax and the first eager init compile in the worker: the exhibit's longer limit.
RUN_TIMEOUT_MS = 90_000


def run_and_wait(page: Page) -> None:
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=RUN_TIMEOUT_MS
    )


def linen_key(path: list[str]) -> str:
    """The key flax derives for a parameter of the MLP, as the page writes ``key_data``."""
    counter = 1 if path[-1] == "kernel" else 2
    digest = hashlib.sha1(path[0].encode() + counter.to_bytes(1, "big")).digest()
    key = jax.random.fold_in(jax.random.key(0), int.from_bytes(digest[:4], "big"))
    return "[" + " ".join(str(int(x)) for x in np.asarray(jax.random.key_data(key))) + "]"


def test_flax_params_lists_each_param_with_its_key(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "flax_params")
    set_theme(page, "light")
    assert EXHIBITS["flax_params"].default_example == "mlp"
    run_and_wait(page)

    rows = page.get_by_test_id("param-row")
    expect(rows).to_have_count(6)
    names = [f"Dense_{i}/{p}" for i in range(3) for p in ("kernel", "bias")]
    for i, name in enumerate(names):
        row = rows.nth(i)
        expect(row).to_have_attribute("data-path", name)
        expect(row.get_by_test_id("param-key")).to_have_text(linen_key(name.split("/")))
    expect(page.get_by_test_id("all-read")).to_be_visible()
    expect(page.get_by_test_id("init-figures")).to_contain_text("6 leaves, 225 numbers")
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    shoot_both_themes(page, screenshots, "flax_params", full_page=True)

    page.get_by_test_id("flax-apply").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "flax_params-apply-light.png"), full_page=True)
    # Step back to the second param_created event: two leaves, the bias just made.
    page.get_by_test_id("stepper-first").click()
    while page.get_by_test_id("stepper-event-type").inner_text() != "param_created":
        page.get_by_test_id("stepper-next").click()
    page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("param_created")
    expect(rows).to_have_count(2)
    leaves = page.locator("[data-testid=tree-line][data-depth='2']")
    expect(leaves).to_have_count(2)
    expect(page.locator("tr.ui-hit[data-testid=tree-line]")).to_contain_text("bias")
    page.screenshot(path=str(screenshots / "flax_params-step-light.png"), full_page=True)

    set_code(page, PATHS["branch_silent"].read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("unused-params")).to_contain_text("Dense_2/bias, Dense_2/kernel")
    expect(page.get_by_test_id("never-read")).to_have_count(2)
    page.screenshot(path=str(screenshots / "flax_params-silent-light.png"), full_page=True)

    text = PATHS["branch_error"].read_text()
    set_code(page, text)
    run_and_wait(page)
    error = page.get_by_test_id("flax-error")
    expect(error).to_contain_text("flax.errors.ScopeParamShapeError")
    line = next(
        i
        for i, src in enumerate(text.splitlines(), 1)
        if src.strip() == "x = nn.relu(nn.Dense(4)(x))"
    )
    expect(error.get_by_test_id("error-line-chip")).to_have_text(f"line {line}")
    page.screenshot(path=str(screenshots / "flax_params-error-light.png"), full_page=True)

    set_code(page, PATHS["nnx_mlp"].read_text())
    run_and_wait(page)
    expect(rows).to_have_count(4)
    expect(page.get_by_test_id("other-keys")).to_contain_text("fold_in(default key, 2)")
    split = page.get_by_test_id("nnx-split")
    expect(split.get_by_test_id("state-leaf")).to_have_count(6)
    expect(split).to_contain_text("gives back a model with the same output")
    split.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "flax_params-nnx-light.png"), full_page=True)
    assert console_errors == []
