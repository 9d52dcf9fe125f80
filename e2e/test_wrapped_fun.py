"""The wrapped_fun exhibit in real Chromium: the default example's stack (generator names,
outermost first), its store's PyTreeDef and the call order are what a plain ``jax.vmap`` run
of the example shows to this test's own hook on ``WrappedFun.call_wrapped``; switching the
transformation to ``jit`` says plainly that no WrappedFun stack was built. Screenshots in the
light and dark themes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jax
from jax._src import linear_util as lu
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_theme, shoot_both_themes
from exhibits.registry import EXHIBITS

EXAMPLE = EXHIBITS["wrapped_fun"].example_paths()[EXHIBITS["wrapped_fun"].default_example]


def plain_vmap() -> tuple[list[str], str]:
    """The transforms' generator names of the WrappedFun ``jax.vmap`` calls around the example's
    ``f`` (outermost first), and the PyTreeDef its first-applied transformation stored."""
    namespace: dict[str, Any] = {"__name__": "example"}
    exec(compile(EXAMPLE.read_text(), str(EXAMPLE), "exec"), namespace)
    seen: list[Any] = []
    cls: Any = lu.WrappedFun
    call = cls.call_wrapped

    def observing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.f is namespace["f"]:
            seen.append(self)
        return call(self, *args, **kwargs)

    cls.call_wrapped = observing
    try:
        out = jax.vmap(namespace["f"], in_axes=namespace["in_axes"])(*namespace["args"])
    finally:
        cls.call_wrapped = call
    (wf,) = seen
    assert repr(wf.stores[-1].val) == repr(jax.tree.structure(out))
    return [g.__name__ for g, _ in wf.transforms], repr(wf.stores[-1].val)


def test_wrapped_fun_shows_vmaps_stack_and_no_stack_for_jit(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "wrapped_fun")
    set_theme(page, "light")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    names, stored = plain_vmap()
    rows = page.get_by_test_id("wf-transform")
    expect(rows).to_have_count(len(names))
    assert [rows.nth(i).get_attribute("data-name") for i in range(len(names))] == names
    expect(page.get_by_test_id("wf-store-value")).to_have_text(stored)
    steps = page.get_by_test_id("wf-step")
    # in through the last applied (outermost) first, f, the fill, out through the first applied
    expected = [f"→ {n}" for n in names] + ["→ f (your function)", "← f (your function)"]
    expected += [f"■ {names[-1]} fills its store"] + [f"← {n}" for n in reversed(names)]
    expect(steps).to_have_count(len(expected))
    texts = [steps.nth(i).locator("code").inner_text() for i in range(len(expected))]
    assert texts == expected
    expect(page.get_by_test_id("no-stack")).to_have_count(0)
    shoot_both_themes(page, screenshots, "wrapped_fun", full_page=True)

    page.get_by_test_id("transform-select").select_option("jit")
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=60_000)
    expect(page.get_by_test_id("wf-call")).to_have_text("jax.jit(f)(*args)")
    expect(page.get_by_test_id("no-stack")).to_contain_text(
        "No WrappedFun stack: jax.jit built no WrappedFun around your function; it traces f "
        "with trace_to_jaxpr (jax/_src/interpreters/partial_eval.py"
    )
    expect(page.get_by_test_id("wf-summary")).to_have_attribute("data-built", "0")
    # no stack is an observation, not an error: the tag is not in the error colour
    expect(page.get_by_test_id("no-stack-tag")).not_to_have_class(re.compile(r"\bbad\b"))
    expect(page.get_by_test_id("wf-stack")).to_have_count(0)
    shoot_both_themes(page, screenshots, "wrapped_fun-jit", full_page=True)
    assert console_errors == []


def test_wrapped_fun_custom_vjp_stacks(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The custom_vjp example: fwd and bwd entered (in that order), the primal's stack built and
    never entered with its store empty, each linked to the line that calls the function."""
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "wrapped_fun")
    page.get_by_test_id("example-select").select_option("custom_vjp_clip")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    cores = page.get_by_test_id("wf-core")
    expect(cores).to_have_count(3)
    assert [cores.nth(i).inner_text() for i in range(3)] == [
        "clip_fwd", "clip_bwd", "clip_gradient"
    ]  # fmt: skip
    primal = page.get_by_test_id("wf-stack").nth(2)
    expect(primal).to_contain_text("built, never entered")
    expect(primal.get_by_test_id("wf-store")).to_have_attribute("data-filled", "false")
    expect(primal).to_contain_text("StoreException: Store empty")
    source = EXHIBITS["wrapped_fun"].example_paths()["custom_vjp_clip"].read_text().splitlines()
    call_line = source.index("    return clip_gradient(jnp.sin(x)) * 3.0") + 1
    expect(primal.get_by_test_id("wf-call-line")).to_have_text(f"from line {call_line}")
    page.screenshot(path=str(screenshots / "wrapped_fun-custom_vjp.png"), full_page=True)
    assert console_errors == []
