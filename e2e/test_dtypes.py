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
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
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


def test_dtypes_highlights_the_result_type(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "dtypes")
    set_theme(page, "light")
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
            shoot_both_themes(page, screenshots, "dtypes", full_page=True)
    # the default example is the pair whose answer x64 changes, and the page says why
    assert expected(False)[0] != expected(True)[0]
    expect(page.get_by_test_id("x64-note")).to_contain_text("x64 changes the answer")
    shoot_both_themes(page, screenshots, "dtypes-x64-on", full_page=True)
    assert console_errors == []


def test_dtypes_says_a_promotion_at_its_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The bf16_promoted example (cases/DT01, optax#1405): plain JAX returns float32 from
    bfloat16 arguments, and the page names the line of ``lr * grads``; a fixed learning rate (a
    Python float) keeps bfloat16 and the page says nothing changed."""
    path = EXHIBITS["dtypes"].example_paths()["bf16_promoted"]
    code = path.read_text()
    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(code, str(path), "exec"), namespace)
    out = jax.eval_shape(namespace["f"], *namespace["args"])
    assert out.dtype == jnp.float32 and namespace["args"][0].dtype == jnp.bfloat16
    line = next(i for i, t in enumerate(code.splitlines(), 1) if "step = lr * grads" in t)

    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "dtypes")
    set_code(page, code)
    run_and_wait(page)
    change = page.get_by_test_id("dtype-change")
    expect(change).to_have_count(1)
    expect(change).to_have_attribute("data-line", str(line))
    expect(change).to_have_attribute("data-kind", "promoted")
    expect(page.get_by_test_id("change-line")).to_have_text(f"line {line}")
    expect(page.get_by_test_id("change-text")).to_contain_text(
        "bf16[4,8] promoted to f32[4,8] by * with f32[] constant"
    )
    # The editor marks the finding's line once the run ends, as it marks a failed run's line.
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_have_text(code.splitlines()[line - 1])
    page.screenshot(path=str(screenshots / "dtypes-promoted.png"), full_page=False)

    set_code(page, code.replace("lr = np.float32(1e-3)", "lr = 1e-3"))
    run_and_wait(page)
    expect(page.get_by_test_id("no-changes")).to_be_visible()
    expect(page.get_by_test_id("dtype-change")).to_have_count(0)
    expect(selected).to_have_count(0)
    assert console_errors == []


def test_dtypes_tells_a_finding_from_a_note(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The int64_ids example (jax-ml/jax#18385): plain JAX (x64 off) wraps the ids int32 cannot
    hold, computed here with numpy's cast; the page tags that change a finding and the float64
    table, only rounded to float32, a note, both at the line that sets ``args``."""
    path = EXHIBITS["dtypes"].example_paths()["int64_ids"]
    code = path.read_text()
    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(code, str(path), "exec"), namespace)
    ids = namespace["ids"]
    wrapped = [int(v) for v in ids if v != v.astype("int32")]
    assert len(wrapped) == 2
    line = next(i for i, t in enumerate(code.splitlines(), 1) if t.startswith("args = ("))

    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "dtypes")
    set_code(page, code)
    run_and_wait(page)
    change = page.get_by_test_id("dtype-change")
    expect(change).to_have_count(2)
    expect(change.nth(0)).to_have_attribute("data-finding", "true")
    expect(change.nth(1)).to_have_attribute("data-finding", "false")
    for i in range(2):
        expect(change.nth(i)).to_have_attribute("data-line", str(line))
    first = int(ids[ids != ids.astype("int32")][0])
    expect(page.get_by_test_id("change-text").nth(0)).to_contain_text(
        f"{len(wrapped)} of {ids.size} values lie outside the 32-bit range and wrap around"
    )
    expect(page.get_by_test_id("change-text").nth(0)).to_contain_text(
        f"{first} -> {int(ids.astype('int32')[ids != ids.astype('int32')][0])}"
    )
    expect(page.get_by_test_id("change-text").nth(1)).to_contain_text("as JAX documents")
    expect(page.get_by_test_id("changes-split")).to_have_text("1 finding, 1 note")
    page.get_by_test_id("dtype-changes").screenshot(path=str(screenshots / "dtypes-note.png"))
    assert console_errors == []


def test_dtypes_says_a_precision_loss_at_its_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The bf16_token_count example (cases/DT05, ml_dtypes#63): plain JAX counts 4,097 valid
    tokens as 4,096 in bfloat16 (numpy: 4,097); the page tags the count's line a finding, with
    both numbers and the fix (``preferred_element_type``)."""
    path = EXHIBITS["dtypes"].example_paths()["bf16_token_count"]
    code = path.read_text()
    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(code, str(path), "exec"), namespace)
    mask = namespace["mask"]
    low = float(jnp.dot(mask, mask))
    exact = float(sum(float(v) for v in mask.astype(jnp.float32)))
    assert (low, exact) == (4096.0, 4097.0)
    line = next(i for i, t in enumerate(code.splitlines(), 1) if "count = jnp.dot" in t)

    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "dtypes")
    set_code(page, code)
    run_and_wait(page)
    change = page.get_by_test_id("dtype-change")
    expect(change).to_have_count(1)
    expect(change).to_have_attribute("data-kind", "precision_lost")
    expect(change).to_have_attribute("data-finding", "true")
    expect(change).to_have_attribute("data-line", str(line))
    expect(page.get_by_test_id("change-text")).to_contain_text(
        f"result: {low} where float32 gives {exact}"
    )
    expect(page.get_by_test_id("dtype-changes")).to_contain_text("preferred_element_type")
    page.get_by_test_id("dtype-change").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "dtypes-precision-lost.png"), full_page=False)
    assert console_errors == []
