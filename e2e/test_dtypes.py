"""The dtypes exhibit in real Chromium: the default example's highlighted cell of the promotion
table is ``jnp.result_type`` of its arguments (computed here, with x64 off as the worker runs it,
then with x64 on after the switch), in the row and column of the arguments' types. Screenshots
in the light and dark themes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait
from exhibits.registry import EXHIBITS

EXAMPLE = EXHIBITS["dtypes"].example_paths()[EXHIBITS["dtypes"].default_example]


def short(dtype: Any, weak: bool = False) -> str:
    """The type as the table writes it: a jaxpr's short dtype name (``i32``), ``f*`` if weak."""
    if weak:
        return {"i": "i*", "u": "i*", "f": "f*", "c": "c*"}[jnp.dtype(dtype).kind]
    aval: Any = jax.core.ShapedArray((), jnp.dtype(dtype))
    return str(aval.str_short(short_dtypes=True)).removesuffix("[]")


def expected(x64: bool) -> tuple[str, list[str]]:
    """``jnp.result_type`` of the example's argument leaves, and each leaf's type, under x64."""
    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(EXAMPLE.read_text(), str(EXAMPLE), "exec"), namespace)
    leaves = jax.tree_util.tree_leaves(namespace["args"])
    with jax.enable_x64(x64):
        result = jnp.result_type(*leaves)
        types = [short(a.dtype, a.weak_type) for a in map(jax.typeof, leaves)]
    return result.name, types


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_dtypes_highlights_the_result_type(
    page: Page, console_errors: list[str], screenshots: Path, theme: str
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "dtypes")
    if page.locator("html").get_attribute("data-theme") != theme:
        page.get_by_test_id("theme-toggle").click()
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    for x64 in (False, True):
        result, types = expected(x64)
        mode = "on" if x64 else "off"
        page.get_by_test_id(f"mode-{mode}").click()
        expect(page.get_by_test_id(f"mode-{mode}")).to_have_attribute("aria-pressed", "true")
        answer = page.get_by_test_id("answer-cell")
        expect(answer).to_have_count(1)
        # two arguments: the answer is the cell in the first's row and the second's column
        assert [answer.get_attribute("data-row"), answer.get_attribute("data-col")] == types
        # the cell's type, and † where the other x64 setting joins these two types otherwise
        expect(answer).to_have_text(re.compile(rf"^{re.escape(short(result))}†?$"))
        expect(page.get_by_test_id(f"result-{mode}")).to_contain_text(result)
        if not x64:
            page.get_by_test_id("promotion").scroll_into_view_if_needed()
            page.screenshot(path=str(screenshots / f"dtypes-{theme}.png"), full_page=True)
    # the default example is the pair whose answer x64 changes, and the page says why
    assert expected(False)[0] != expected(True)[0]
    expect(page.get_by_test_id("x64-note")).to_contain_text("x64 changes the answer")
    page.screenshot(path=str(screenshots / f"dtypes-x64-on-{theme}.png"), full_page=True)
    assert console_errors == []
