"""The pallas exhibit in real Chromium: the default matmul's grid, the slices a hovered program
instance reads and writes (against the example's own index_map functions called here), the
kernel jaxpr as JAX prints it and the allclose verdict; the overwrite example's findings and its
never-written output block. Screenshots in the light and dark themes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax
import numpy as np
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from exhibits.registry import EXHIBITS

PATHS = EXHIBITS["pallas"].example_paths()


def recorded(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The example run as plain Python, its one ``pl.pallas_call``'s keyword arguments kept."""
    path = PATHS[name]
    ns: dict[str, Any] = {"__name__": "example"}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    calls: list[dict[str, Any]] = []
    real = ns["pl"]

    def pallas_call(kernel: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real.pallas_call(kernel, **kwargs)

    ns["pl"] = SimpleNamespace(pallas_call=pallas_call, BlockSpec=real.BlockSpec)
    ns["f"](*ns["args"])
    return ns, calls[0]


def slice_text(name: str, spec: Any, shape: tuple[int, ...], pid: tuple[int, ...]) -> str:
    """``name[a:b, c:d]``: the user's index_map at ``pid`` times the block shape, clipped."""
    parts = []
    for i, b, n in zip(spec.index_map(*pid), spec.block_shape, shape, strict=True):
        start = int(i) * b
        parts.append(f"{min(start, n)}:{min(start + b, n)}")
    return f"{name}[{', '.join(parts)}]"


def test_pallas_matmul_blocks(page: Page, console_errors: list[str], screenshots: Path) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "pallas")
    set_theme(page, "light")
    assert EXHIBITS["pallas"].default_example == "matmul"
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    ns, call = recorded("matmul")
    grid = call["grid"]
    expect(page.get_by_test_id("pallas-grid")).to_have_text(f"grid ({', '.join(map(str, grid))})")
    points = page.get_by_test_id("grid-point")
    expect(points).to_have_count(int(np.prod(grid)))
    x, y = ns["args"]
    specs = [
        ("x", call["in_specs"][0], x.shape),
        ("y", call["in_specs"][1], y.shape),
        ("o", call["out_specs"], call["out_shape"].shape),
    ]
    for k, pid in enumerate(np.ndindex(*grid)):
        if k not in (0, 4):
            continue
        points.nth(k).hover()
        expect(page.get_by_test_id("picked-pid")).to_have_text(f"({', '.join(map(str, pid))})")
        expect(page.get_by_test_id("access-slice")).to_have_text(
            [slice_text(n, s, shape, pid) for n, s, shape in specs]
        )
        # one block filled in each operand's picture
        expect(page.locator('[data-testid="block-cell"][data-picked="true"]')).to_have_count(3)
    # the kernel jaxpr as JAX prints it
    (eqn,) = jax.make_jaxpr(ns["f"])(*ns["args"]).eqns
    kernel = page.get_by_test_id("kernel-jaxpr")
    for line in str(eqn.params["jaxpr"]).splitlines():
        expect(kernel).to_contain_text(line.strip())
    # the output against the reference: numpy's matmul agrees
    got = np.asarray(ns["f"](*ns["args"]), np.float64)
    want = np.asarray(x, np.float64) @ np.asarray(y, np.float64)
    assert np.allclose(got, want, atol=1e-4)
    expect(page.get_by_test_id("verdict")).to_contain_text("allclose: max |f − reference| = ")
    # the two printed arrays say which is which
    expect(page.get_by_test_id("preview-label")).to_have_text(["f(*args)", "reference(*args)"])
    page.get_by_test_id("pallas-pictures").scroll_into_view_if_needed()
    shoot_both_themes(page, screenshots, "pallas", full_page=True)
    assert console_errors == []


def test_pallas_overwrite_findings(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "pallas")
    set_code(page, PATHS["overwrite"].read_text())
    run_and_wait(page)
    _, call = recorded("overwrite")
    # both program instances' out index map returns block 0: one output block, two writers
    assert [call["out_specs"].index_map(i) for i in range(2)] == [(0,), (0,)]
    findings = page.get_by_test_id("pallas-finding")
    expect(findings).to_have_count(2)
    expect(findings.nth(0)).to_have_attribute("data-kind", "race")
    expect(findings.nth(1)).to_have_attribute("data-kind", "unwritten")
    expect(page.locator('[data-testid="block-cell"][data-revisited="true"]')).to_have_count(1)
    expect(page.get_by_test_id("unwritten-block")).to_have_count(1)
    expect(page.get_by_test_id("verdict")).to_contain_text("not allclose")
    page.get_by_test_id("pallas-pictures").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "pallas-overwrite.png"), full_page=True)
    assert console_errors == []


ACCUMULATE = """\
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import pallas as pl

def kernel(x_ref, y_ref, o_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)
    o_ref[...] += x_ref[...] @ y_ref[...]

def f(x, y):
    return pl.pallas_call(
        kernel,
        grid=(2, 2, 2),
        in_specs=[pl.BlockSpec((4, 4), lambda i, j, k: (i, k)),
                  pl.BlockSpec((4, 4), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((4, 4), lambda i, j, k: (i, j)),
        out_shape=jax.ShapeDtypeStruct((8, 8), jnp.float32),
        interpret=True,
    )(x, y)

def reference(x, y):
    return x @ y

args = (np.arange(64, dtype=np.float32).reshape(8, 8) / 64, np.eye(8, dtype=np.float32))
"""


def test_pallas_accumulation_over_a_3d_grid(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The k-axis matmul revisits each output block along axis 2 and reads it (``+=``): a note,
    no finding; every output block has two writers; the output equals numpy's ``x @ y``."""
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "pallas")
    set_code(page, ACCUMULATE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("grid-point")).to_have_count(8)
    expect(page.get_by_test_id("pallas-finding")).to_have_count(0)
    expect(page.get_by_test_id("pallas-note")).to_contain_text("along grid axis 2")
    out = page.locator('[data-testid="operand-picture"][data-operand="o"]')
    expect(out.locator('[data-testid="block-cell"][data-revisited="true"]')).to_have_count(4)
    ns: dict[str, Any] = {}
    exec(ACCUMULATE, ns)
    x, y = ns["args"]
    assert np.allclose(np.asarray(ns["f"](x, y)), x @ y, atol=1e-5)
    expect(page.get_by_test_id("verdict")).to_contain_text("allclose")
    page.get_by_test_id("grid-point").nth(5).hover()
    expect(page.get_by_test_id("picked-pid")).to_have_text("(1, 0, 1)")
    page.get_by_test_id("pallas-pictures").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "pallas-accumulate.png"), full_page=True)
    assert console_errors == []
