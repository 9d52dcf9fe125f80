"""The export exhibit in real Chromium: the default example's Exported (its symbolic avals,
calling convention, platforms, serialized size), the dimension variable and its constraint, the
round trip, and the module text, each against plain ``jax.export`` run here; the reshape that is
not polymorphic fails with JAX's own message at its line. Screenshots in both themes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from exhibits.registry import EXHIBITS

PATHS = EXHIBITS["export"].example_paths()


def namespace(name: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "example"}
    path = PATHS[name]
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns


def plain_export(ns: dict[str, Any]) -> Any:
    args = jax.export.symbolic_args_specs(ns["args"], tuple(ns["shapes"]))
    return jax.export.export(jax.jit(ns["f"]))(*args)


def test_export_shows_the_exported_module_and_its_round_trip(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    ns = namespace("mlp_batch")
    exp = plain_export(ns)
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "export")
    set_theme(page, "light")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    ins = page.get_by_test_id("in-aval")
    expect(ins).to_have_count(len(exp.in_avals))
    shorts = [a.str_short(short_dtypes=True) for a in exp.in_avals]
    expect(ins.last).to_contain_text(shorts[-1])  # f32[b,8]
    expect(page.get_by_test_id("out-aval")).to_contain_text(
        exp.out_avals[0].str_short(short_dtypes=True)
    )
    expect(page.get_by_test_id("platforms")).to_have_text(f"platforms: {exp.platforms[0]}")
    expect(page.get_by_test_id("calling-convention")).to_have_text(
        f"calling convention v{exp.calling_convention_version}"
    )
    # the serialized size names the probe's file in its locations: a size, not this test's
    expect(page.get_by_test_id("serialized-bytes")).to_have_text(
        re.compile(r"serialized [\d,]+ bytes")
    )

    var = page.get_by_test_id("dim-var")
    expect(var).to_have_count(1)
    expect(var).to_contain_text("b")
    expect(var).to_contain_text("args[1].shape[0]")
    expect(var).to_contain_text(str(ns["x"].shape[0]))
    expect(page.get_by_test_id("dim-constraint")).to_contain_text("args[1].shape[0] >= 1")

    calls = page.get_by_test_id("roundtrip-call")
    expect(calls).to_have_count(3)
    expect(calls.nth(0)).to_have_attribute("data-equal", "true")
    expect(calls.nth(1)).to_contain_text("b=6")
    expect(calls.nth(1)).to_contain_text("f32[6,8]")
    expect(calls.nth(1)).to_have_attribute("data-equal", "true")
    expect(page.get_by_test_id("roundtrip-verdict")).to_contain_text("2 of 2 calls equal jit(f)")
    # b=0: the deserialized module's shape check refuses it with JAX's message
    back: Any = jax.export.deserialize(exp.serialize())
    with pytest.raises(ValueError) as refused:
        back.call(ns["params"], np.zeros((0, 8), np.float32))
    expect(calls.nth(2)).to_have_attribute("data-check", "true")
    expect(calls.nth(2).get_by_test_id("call-error")).to_have_text(f"ValueError: {refused.value}")

    module = page.get_by_test_id("module-text")
    # a line of JAX's own module text (the wrapper main's dimension read)
    expect(module).to_contain_text("stablehlo.get_dimension_size %arg4, dim = 0")
    assert "stablehlo.get_dimension_size %arg4, dim = 0" in exp.mlir_module()
    shoot_both_themes(page, screenshots, "export", full_page=True)
    page.get_by_test_id("export-module").scroll_into_view_if_needed()
    expect(module.locator('[data-line="0"]')).to_be_visible()
    page.wait_for_timeout(500)  # let the scrolled panel paint before the picture
    shoot_both_themes(page, screenshots, "export-module")
    assert console_errors == []


def test_a_reshape_that_is_not_polymorphic_fails_at_its_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    ns = namespace("reshape_not_polymorphic")
    with pytest.raises(jax.errors.InconclusiveDimensionOperation) as truth:
        plain_export(ns)
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "export")
    set_code(page, PATHS["reshape_not_polymorphic"].read_text())
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    expect(page.get_by_test_id("error-message")).to_have_text(str(truth.value))
    expect(page.get_by_test_id("error-line")).to_contain_text("line 8")
    expect(page.get_by_test_id("error-explanation")).to_contain_text("not polymorphic")
    expect(page.get_by_test_id("arg-spec")).to_have_text("args[0]: (b, 8)")
    expect(page.get_by_test_id("export-failed")).to_contain_text(
        "refused f at line 8: InconclusiveDimensionOperation"
    )
    # the example itself runs as plain Python: 6 rows of 8 do split into 3 rows
    assert np.asarray(ns["f"](*ns["args"])).shape == (3,)
    page.screenshot(path=str(screenshots / "export-reshape-error.png"))
    assert console_errors == []
