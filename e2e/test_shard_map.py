"""The shard_map exhibit in real Chromium: the default example (psum_rows) shows the body jaxpr,
the per-device aval and varying axes of its input and output, JAX's verdict with every check
passed, and the assembled output equal to plain JAX's; an invalid spec (typed into the view's
in_specs field, and the indivisible_spec example) shows JAX's error with the spec entry at fault
highlighted. Screenshots in light and dark themes."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from playwright.sync_api import Page, expect

from e2e.browser import (
    in_both_themes,
    open_exhibit,
    run_and_wait,
    set_code,
    set_theme,
    shoot_both_themes,
)
from e2e.replay import replay_runs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "exhibits" / "shard_map" / "examples"


def plain(name: str) -> tuple[dict[str, Any], Any]:
    """The example run by plain ``jax.jit(jax.shard_map(...))`` in a fresh process."""
    code = (
        "import json, runpy, numpy as np, jax\n"
        f"ns = runpy.run_path({str(EXAMPLES / f'{name}.py')!r})\n"
        "fun = jax.shard_map(ns['f'], mesh=ns['mesh'], in_specs=ns['in_specs'],"
        " out_specs=ns['out_specs'])\n"
        "try:\n"
        "    out = np.asarray(jax.jit(fun)(*ns['args'])).tolist()\n"
        "    print(json.dumps({'ok': True, 'out': out}))\n"
        "except Exception as e:\n"
        "    print(json.dumps({'ok': False, 'cls': type(e).__name__, 'msg': str(e)}))\n"
    )
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    record = json.loads(out.stdout.strip().splitlines()[-1])
    return record, record.get("out")


def load_example(page: Page, name: str) -> None:
    page.get_by_test_id("example-select").select_option(name)
    expect(page.get_by_test_id("editor")).to_contain_text("def f(")


def test_default_example_body_and_verdict(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    answered = replay_runs(page, "shard_map", "psum_rows")
    open_exhibit(page, "shard_map")
    set_theme(page, "light")
    load_example(page, "psum_rows")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert len(answered) == 1, answered
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    expect(page.get_by_test_id("jaxpr-text")).to_contain_text("psum_invariant[axes=('y',)]")
    expect(page.get_by_test_id("sm-input-0-aval")).to_have_text("f32[2,2]{V:(x,y)}")
    expect(page.get_by_test_id("sm-input-0-vma")).to_have_text("{V:(x,y)}")
    expect(page.get_by_test_id("sm-output-0-vma")).to_have_text("{V:x}")
    expect(page.get_by_test_id("sm-verdict")).to_have_attribute("data-ok", "true")
    for name in ("unknown_axis", "divisibility", "replication"):
        expect(page.get_by_test_id(f"sm-check-{name}")).to_have_attribute("data-status", "passed")
    expect(page.get_by_test_id("spec-entry-fault")).to_have_count(0)
    expect(page.get_by_test_id("sm-match")).to_have_text("equals the reference")
    record, out = plain("psum_rows")
    assert record["ok"]
    shown = page.get_by_test_id("sm-assembled-0").locator("pre").inner_text()
    np.testing.assert_allclose(np.asarray(ast.literal_eval(shown)), np.asarray(out))
    # The body's psum_invariant is the snippet's lax.psum: said beside the row, with the call
    # quoted from the eqn's source line (the example's own psum line).
    source = (EXAMPLES / "psum_rows.py").read_text().splitlines()
    psum_line = next(i for i, t in enumerate(source, 1) if "jax.lax.psum(" in t)
    row = page.get_by_test_id("sm-collectives").locator("li").first
    expect(row).to_contain_text(f"psum_invariant over 'y' line {psum_line}")
    expect(row.locator('[data-testid^="sm-collective-call-"]')).to_have_text(
        f"← your {source[psum_line - 1].split('#')[0].strip()}"
    )
    expect(row.locator('[data-testid^="sm-collective-note-"]')).to_contain_text(
        "psum_invariant is JAX's name for jax.lax.psum inside shard_map with check_vma=True"
    )
    expect(row.locator('[data-testid^="sm-collective-note-"]')).to_contain_text(
        "jax/_src/lax/parallel.py: _psum → bind_psum_invariant → psum_invariant_p"
    )
    # A collective selects its eqn in the body jaxpr and its line in the editor.
    page.get_by_test_id("sm-collectives").locator("button").first.click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_contain_text("jax.lax.psum(partial")
    row.scroll_into_view_if_needed()
    shoot_both_themes(page, screenshots, "shard_map-collective-note")
    assembled = page.get_by_test_id("sm-assembled-0")
    assembled.scroll_into_view_if_needed()

    def shoot(theme: str) -> None:
        assembled.screenshot(path=str(screenshots / f"shard_map-assembled-{theme}.png"))
        page.screenshot(path=str(screenshots / f"shard_map-psum_rows-{theme}.png"), full_page=True)

    in_both_themes(page, shoot)
    assert console_errors == []


def test_an_invalid_spec_shows_jaxs_error_with_the_entry_highlighted(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "shard_map")
    set_theme(page, "light")
    load_example(page, "psum_rows")
    run_and_wait(page)
    expect(page.get_by_test_id("sm-verdict")).to_have_attribute("data-ok", "true")

    # Type an unknown axis into the in_specs field and rerun.
    page.get_by_test_id("sm-in-specs").fill("(P('x', 'z'),)")
    page.get_by_test_id("sm-apply-spec").click()
    expect(page.get_by_test_id("sm-verdict")).to_have_attribute("data-ok", "false")
    expect(page.get_by_test_id("sm-check-unknown_axis")).to_have_attribute("data-status", "failed")
    expect(page.get_by_test_id("sm-check-divisibility")).to_have_attribute(
        "data-status", "not_reached"
    )
    expect(page.get_by_test_id("shard-map-error")).to_contain_text(
        "shard_map in_specs argument must refer to an axis marked as manual"
    )
    expect(page.get_by_test_id("shard-map-error")).to_contain_text("in_specs[0] refers to 'z'")
    fault = page.get_by_test_id("spec-entry-fault")
    expect(fault).to_have_count(1)
    expect(fault).to_have_text("'z'")
    expect(page.get_by_test_id("sm-fault-note")).to_have_text("not a mesh axis: 'z'")
    shoot_both_themes(page, screenshots, "shard_map-unknown-axis", full_page=True)

    # The indivisible example: JAX's divisibility message, entry 'x' of in_specs[0] marked.
    page.get_by_test_id("sm-reset-spec").click()  # back to the snippet's own in_specs: a rerun
    expect(page.get_by_test_id("sm-verdict")).to_have_attribute("data-ok", "true", timeout=30_000)
    load_example(page, "indivisible_spec")
    run_and_wait(page)
    record, _ = plain("indivisible_spec")
    assert not record["ok"]
    expect(page.get_by_test_id("sm-check-divisibility")).to_have_attribute("data-status", "failed")
    first_line = record["msg"].splitlines()[0]
    expect(page.get_by_test_id("shard-map-error")).to_contain_text(first_line)
    expect(page.get_by_test_id("shard-map-error")).to_contain_text("4 does not evenly divide 6")
    expect(page.get_by_test_id("spec-entry-fault")).to_have_text("'x'")
    expect(page.get_by_test_id("sm-spec-in_specs[0]")).to_have_attribute("data-fault", "entry")
    shoot_both_themes(page, screenshots, "shard_map-indivisible", full_page=True)
    assert console_errors == []


def test_replication_failure_marks_out_specs_and_shows_the_varying_output(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "shard_map")
    load_example(page, "out_replication")
    run_and_wait(page)
    record, _ = plain("out_replication")
    assert not record["ok"]
    expect(page.get_by_test_id("sm-check-replication")).to_have_attribute("data-status", "failed")
    expect(page.get_by_test_id("shard-map-error")).to_contain_text(
        "replicated across mesh axis 'y'"
    )
    expect(page.get_by_test_id("sm-spec-out_specs")).to_have_attribute("data-fault", "whole")
    expect(page.get_by_test_id("sm-output-0-vma")).to_have_text("{V:(x,y)}")
    expect(page.get_by_test_id("sm-jaxpr-note")).to_be_visible()
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    page.screenshot(path=str(screenshots / "shard_map-out-replication.png"), full_page=True)
    assert console_errors == []


def test_a_collective_over_an_unknown_axis_and_explicit_axes_are_explained(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """psum over 'nope' on a ('x', 'y') mesh: JAX's bare AssertionError, with the exhibit's
    explanation in the verdict and the error panel. psum_rows on jax.make_mesh's default
    Explicit axes: JAX's "does not match the specs of the input" with the hint beside it."""
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "shard_map")
    source = (EXAMPLES / "psum_rows.py").read_text()
    set_code(page, source.replace('jax.lax.psum(partial, "y")', 'jax.lax.psum(partial, "nope")'))
    run_and_wait(page)
    expect(page.get_by_test_id("shard-map-error")).to_have_text("AssertionError (no message)")
    said = "axis 'nope' is not an axis of the mesh ('x', 'y'): inside shard_map psum"
    expect(page.get_by_test_id("sm-explanation")).to_contain_text(said)
    expect(page.get_by_test_id("error-explanation")).to_contain_text(said)
    page.screenshot(path=str(screenshots / "shard_map-unknown-collective-axis-light.png"))

    set_code(page, source.replace(", axis_types=(AxisType.Auto,) * 2", ""))
    run_and_wait(page)
    expect(page.get_by_test_id("shard-map-error")).to_contain_text(
        "ValueError: in_specs passed to shard_map: P('x', 'y') does not match the specs of the "
        "input: P(None, None)"
    )
    hint = "The mesh's axes are (Explicit, Explicit)"
    expect(page.get_by_test_id("sm-explanation")).to_contain_text(hint)
    expect(page.get_by_test_id("error-explanation")).to_contain_text(hint)
    page.screenshot(path=str(screenshots / "shard_map-explicit-axes-hint-light.png"))
    assert console_errors == []


def test_all_gather_over_an_unknown_axis_and_an_out_specs_axis_name_their_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """all_gather over 'nope': JAX's bare NameError, explained as psum's is; out_specs naming
    an axis 'w' the mesh lacks: the verdict names the out_specs line."""
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "shard_map")
    source = (EXAMPLES / "psum_rows.py").read_text()
    set_code(
        page, source.replace('jax.lax.psum(partial, "y")', 'jax.lax.all_gather(partial, "nope")')
    )
    run_and_wait(page)
    expect(page.get_by_test_id("shard-map-error")).to_have_text(
        "NameError: unbound axis name: nope"
    )
    said = "axis 'nope' is not an axis of the mesh ('x', 'y')"
    expect(page.get_by_test_id("sm-explanation")).to_contain_text(said)
    expect(page.get_by_test_id("error-explanation")).to_contain_text(said)

    lines = source.split("\n")
    out_line = next(i for i, t in enumerate(lines, 1) if t.startswith("out_specs ="))
    set_code(
        page,
        "\n".join(
            'out_specs = P("x", "w")' if i == out_line else t for i, t in enumerate(lines, 1)
        ),
    )
    run_and_wait(page)
    expect(page.get_by_test_id("shard-map-error")).to_contain_text("out_specs refers to 'w'")
    expect(page.get_by_test_id("sm-verdict-line")).to_contain_text(f"line {out_line}")
    page.get_by_test_id("sm-verdict").screenshot(
        path=str(screenshots / "shard_map-out-specs-line-light.png")
    )
    assert console_errors == []


def test_real_code_the_call_inside_f_is_found(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "shard_map")
    load_example(page, "found_in_jit")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    source = (EXAMPLES / "found_in_jit.py").read_text().splitlines()
    call = next(i for i, t in enumerate(source, 1) if "return jax.shard_map(" in t)
    expect(page.get_by_test_id("sm-found")).to_contain_text(
        f"this is the call at line {call} (inside jit(f))"
    )
    expect(page.get_by_test_id("sm-in-specs")).to_have_count(0)  # the specs are the call's
    expect(page.get_by_test_id("sm-input-1-aval")).to_have_text("f32[2,4]{V:batch}")
    expect(page.get_by_test_id("sm-verdict")).to_have_attribute("data-ok", "true")
    page.get_by_test_id("sm-found").get_by_role("button", name="show the call").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_contain_text("return jax.shard_map(")
    page.screenshot(path=str(screenshots / "shard_map-found_in_jit.png"), full_page=True)
    assert console_errors == []
