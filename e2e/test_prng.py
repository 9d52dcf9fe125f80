"""The prng exhibit in real Chromium: the default example (``reuse_bug``, a typed key drawn from
twice) shows JAX's key-reuse finding at the line of the second draw, with the first draw's line,
both read from the example's text; the key tree marks the reusing call. Then the raw
``PRNGKey`` loop shows jaxscope's own finding and the note that JAX's checker cannot see raw
keys. Screenshots in the light and dark themes."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, set_code, set_theme, shoot_both_themes
from exhibits.registry import EXHIBITS

PATHS = EXHIBITS["prng"].example_paths()
# The run executes f twice, op by op: give it the exhibit's longer limit (budget 3.0).
RUN_TIMEOUT_MS = 90_000


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def run_and_wait(page: Page) -> None:
    page.get_by_test_id("run").click()
    event = page.get_by_test_id("stepper-event-type")
    expect(event).to_have_text("run_finished", timeout=RUN_TIMEOUT_MS)


def test_prng_shows_the_reused_key(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "prng")
    set_theme(page, "light")
    assert EXHIBITS["prng"].default_example == "reuse_bug"
    run_and_wait(page)

    text = PATHS["reuse_bug"].read_text()
    finding = page.get_by_test_id("reuse-finding")
    expect(finding).to_have_count(1)
    expect(finding).to_have_attribute("data-line", str(line_of(text, "bernoulli(key")))
    expect(finding).to_have_attribute("data-first-line", str(line_of(text, "normal(key")))
    second = line_of(text, "bernoulli(key")
    expect(finding.get_by_test_id("reuse-line")).to_have_text(f"line {second}")
    expect(finding.get_by_test_id("checker")).to_have_text("jax.debug_key_reuse")
    rows = page.get_by_test_id("tree-row")
    expect(rows).to_have_count(3)
    reused = page.locator("[data-testid=tree-row][data-reuse=true]")
    expect(reused).to_have_attribute("data-op", "bernoulli")
    shoot_both_themes(page, screenshots, "prng", full_page=True)

    loop = PATHS["prngkey_loop"].read_text()
    set_code(page, loop)
    run_and_wait(page)
    found = page.get_by_test_id("reuse-finding")
    expect(found).to_have_count(1)
    expect(found).to_have_attribute("data-line", str(line_of(loop, "jax.random.split(key)")))
    expect(found.get_by_test_id("checker")).to_have_text("jaxscope")
    expect(page.get_by_test_id("raw-note")).to_contain_text("cannot see")
    page.screenshot(path=str(screenshots / "prng-raw-light.png"), full_page=True)

    # Randomness that does not advance (issue 33): the finding and its fix, at the draw's line.
    dropout = PATHS["dropout_not_advancing"].read_text()
    set_code(page, dropout)
    run_and_wait(page)
    found = page.get_by_test_id("reuse-finding")
    expect(found).to_have_count(1)
    expect(found).to_have_attribute("data-line", str(line_of(dropout, "return module(x)")))
    expect(found).to_contain_text("randomness does not advance")
    expect(found.get_by_test_id("reuse-fix")).to_contain_text("use nnx.jit")
    page.screenshot(path=str(screenshots / "prng-not-advancing-light.png"), full_page=True)
    assert console_errors == []
