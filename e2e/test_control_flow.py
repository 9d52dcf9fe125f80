"""The control_flow exhibit in real Chromium: the default example's carry table and jaxpr (light and
dark), a bad carry showing the leaf path that differs with JAX's own message (checked against JAX
in this process), the weak-typed init JAX promotes, and clicks that select the user's line."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes

BAD = """import jax.numpy as jnp
from jax import lax


def step(carry, x):
    total, count = carry["total"], carry["count"]
    return {"total": total + x, "count": count + 0.5}, None


def f(xs):
    init = {"total": jnp.float32(0.0), "count": jnp.int32(0)}
    return lax.scan(step, init, xs)


args = (jnp.arange(3.0),)
"""


def jax_error() -> str:
    def step(carry: dict[str, jax.Array], x: jax.Array) -> tuple[dict[str, jax.Array], None]:
        return {"total": carry["total"] + x, "count": carry["count"] + 0.5}, None

    init = {"total": jnp.float32(0.0), "count": jnp.int32(0)}
    with pytest.raises(TypeError) as info:
        jax.make_jaxpr(lambda xs: lax.scan(step, init, xs))(jnp.arange(3.0))
    return str(info.value)


def test_default_example(page: Page, console_errors: list[str], screenshots: Path) -> None:
    open_exhibit(page, "control_flow")
    set_theme(page, "light")
    page.get_by_test_id("example-select").select_option("scan_carry")
    expect(page.get_by_test_id("editor")).to_contain_text("tracing step")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    expect(page.get_by_test_id("cf-api")).to_have_text("lax.scan")
    expect(page.get_by_test_id("cf-verdict")).to_have_text("accepted")
    paths = page.get_by_test_id("cf-leaf-path").all_inner_texts()
    assert paths == ["['count']", "['decay']", "['mean']"]  # dict keys sorted, as JAX flattens
    expect(page.get_by_test_id("cf-trace-prints")).to_have_text("1")
    expect(page.get_by_test_id("cf-run-prints")).to_have_text("0")
    expect(page.get_by_test_id("cf-shown-cond_vmap_select")).to_contain_text("holds")
    ops = page.get_by_test_id("cf-unroll-4").locator("td").nth(1).inner_text()
    ops1 = page.get_by_test_id("cf-unroll-1").locator("td").nth(1).inner_text()
    assert int(ops) > int(ops1)
    fused = page.get_by_test_id("cf-unroll-fused").all_inner_texts()
    assert fused == ["1", "4"]  # unroll=4: four copies of the body in one fusion
    # the select_n jaxpr is wider than its card: it scrolls in one box whose horizontal
    # scrollbar shows (nothing clips it on the right or below)
    card = page.get_by_test_id("cf-shown-cond_vmap_select")
    card.scroll_into_view_if_needed()
    box = card.locator(".small-jaxpr")
    clipped = box.evaluate(
        "b => b.scrollHeight > b.clientHeight + 1 || b.scrollWidth > b.clientWidth + 1"
    )
    assert not clipped
    # the jaxpr text itself (``cf-jaxpr-N``), not its Copy/Download row (``cf-jaxpr-N-export``)
    text = card.get_by_test_id(re.compile(r"^cf-jaxpr-\d+$")).first
    card_box, text_box = card.bounding_box(), text.bounding_box()
    assert card_box is not None and text_box is not None
    assert text_box["x"] + text_box["width"] <= card_box["x"] + card_box["width"] + 1
    assert text.evaluate("t => getComputedStyle(t).overflowX") in ("auto", "scroll")
    shoot_both_themes(page, screenshots, "control_flow-vmap")
    # Clicking the call's line badge selects the user's line in the editor.
    page.get_by_test_id("cf-line").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected.first).to_contain_text("lax.scan(step, init, xs)")
    shoot_both_themes(page, screenshots, "control_flow-default", full_page=True)
    page.get_by_test_id("cf-shown-fori_traced_while").scroll_into_view_if_needed()
    shoot_both_themes(page, screenshots, "control_flow-semantics")
    assert console_errors == []


def test_bad_carry_shows_the_leaf_path(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "control_flow")
    set_code(page, BAD)
    run_and_wait(page)
    expect(page.get_by_test_id("cf-verdict")).to_have_text("TypeError")
    expect(page.get_by_test_id("cf-leaf-path-differs")).to_have_text("['count']")
    expect(page.get_by_test_id("cf-leaf-differs")).to_contain_text("i32[]")
    expect(page.get_by_test_id("cf-leaf-differs")).to_contain_text("f32[]")
    message = page.get_by_test_id("cf-message").inner_text()
    want = jax_error().replace("<snippet>", "")
    assert [ln for ln in message.splitlines() if ln.strip()] == [
        ln for ln in want.splitlines() if ln.strip()
    ]
    page.screenshot(path=str(screenshots / "control_flow-bad-carry.png"), full_page=True)
    assert console_errors == []


def test_weak_init_promoted_silently(page: Page, screenshots: Path) -> None:
    open_exhibit(page, "control_flow")
    page.get_by_test_id("example-select").select_option("C13_weak_carry_broken")
    expect(page.get_by_test_id("editor")).to_contain_text("weak-typed int init")
    run_and_wait(page)
    expect(page.get_by_test_id("cf-verdict")).to_have_text("accepted")
    row = page.get_by_test_id("cf-leaf-2")
    expect(row).to_contain_text(".n_pos")
    cells = row.locator("td").all_inner_texts()
    # init (weak int), carry in and carry out (float32): JAX promoted the init
    assert [c.split()[0] for c in cells[1:4]] == ["~i32[]", "f32[]", "f32[]"]
    expect(row.get_by_test_id("cf-promoted")).to_be_visible()
    page.screenshot(path=str(screenshots / "control_flow-weak-carry.png"))
