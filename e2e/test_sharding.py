"""The sharding exhibit in real Chromium: the default example's device grid equals JAX's
``addressable_shards`` (the committed golden, itself checked against plain JAX by
``exhibits/sharding/test_sharding.py``), its all-reduce is listed and highlighted in the HLO;
changing the spec in the form redraws the grid (checked against case C16's expected blocks); an
indivisible spec shows the explained error. Screenshots in light and dark themes."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_theme, shoot_both_themes

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "exhibits" / "sharding" / "golden"
CASES = Path(__file__).resolve().parents[1] / "cases"


def _ranges(index: list[list[int]]) -> str:
    return "[" + ", ".join(f"{a}:{b}" for a, b in index) + "]"


def _open_default(page: Page) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "sharding")
    set_theme(page, "light")
    page.get_by_test_id("example-select").select_option("sum_sharded_axis")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")


def _apply(page: Page, spec: str, array_shape: str | None = None) -> None:
    if array_shape is not None:
        page.get_by_test_id("sharding-array-shape").fill(array_shape)
    page.get_by_test_id("sharding-spec").fill(spec)
    page.get_by_test_id("sharding-apply").click()


def test_default_grid_collectives_and_hlo(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    _open_default(page)
    page.get_by_test_id("placed-args[0]").click()
    grid = page.get_by_test_id("device-grid")
    expect(grid).to_have_attribute("data-spec", "P('x', 'y')")
    golden = json.loads((GOLDEN / "sum_sharded_axis.json").read_text())
    for shard in golden["args0"]:
        cell = f"device-range-{shard['device_id']}"
        expect(page.get_by_test_id(cell)).to_have_text(_ranges(shard["index"]))
    # the array cut into 2 x 4 tiles, each held by one device
    expect(page.locator('[data-testid^="tile-"]')).to_have_count(len(golden["args0"]))
    expect(page.get_by_test_id("collective-counts")).to_have_text("all-reduce ×1")
    # the mesh-form note quotes XLA's mesh and group, and explains no sub-axis: there is none
    note = page.get_by_test_id("collectives-mesh-note")
    expect(note).to_contain_text("mesh['axis_0'=2,'axis_1'=4] is the device mesh XLA built")
    expect(note).to_contain_text("{'axis_0'} names the axes each group runs along")
    expect(note).not_to_contain_text("sub-axis")
    expect(note).not_to_contain_text("device_ids")
    expect(page.get_by_test_id("sharding-grid-caption")).to_contain_text(
        "args[0], the input f receives"
    )
    expect(page.get_by_test_id("sharding-grid-warning")).to_have_count(0)
    shoot_both_themes(page, screenshots, "sharding-grid")
    page.get_by_test_id("collective-0").click()
    hlo_line = page.locator('[data-testid^="hlo-line-"]')
    expect(hlo_line).to_have_count(1)
    expect(hlo_line).to_contain_text("all-reduce(")
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    shoot_both_themes(page, screenshots, "sharding-default", full_page=True)
    # the output of the sum: replicated over x (hatched replicas)
    page.get_by_test_id("placed-output").click()
    replicas = [s for s in golden["outputs"][0] if s["replica_id"] > 0]
    expect(page.locator('[data-replica="true"]')).to_have_count(len(replicas))
    assert console_errors == []


def test_changing_the_spec_redraws_the_grid(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    _open_default(page)
    expect(page.get_by_test_id("sharding-spec")).to_have_value("P('x', 'y')")
    _apply(page, "P('x')")
    page.get_by_test_id("placed-args[0]").click()
    grid = page.get_by_test_id("device-grid")
    expect(grid).to_have_attribute("data-spec", "P('x',)", timeout=60_000)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    # case C16_spec_table places the same (8, 16) array on the same 2 x 4 mesh with P('x')
    expect_c16 = json.loads((CASES / "C16_spec_table.expect.json").read_text())
    want = next(o for o in expect_c16["outputs_sharding"] if o["spec"] == "P('x',)")
    for device, ranges in zip(want["device_ids"], want["per_device_index"], strict=True):
        expect(page.get_by_test_id(f"device-range-{device}")).to_have_text(ranges)
    expect(page.get_by_test_id("sharding-shard-shape")).to_have_text(
        "(" + ", ".join(map(str, want["shard_shape"])) + ")"
    )
    expect(page.get_by_test_id("blocks-table").locator("tbody tr")).to_have_count(2)
    expect(page.get_by_test_id("sharding-mesh-expr")).to_contain_text("jax.make_mesh((2, 4)")
    page.screenshot(path=str(screenshots / "sharding-replicated-light.png"))
    assert console_errors == []


def test_indivisible_spec_shows_the_error(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    _open_default(page)
    _apply(page, "P('y')", array_shape="6, 16")
    card = page.get_by_test_id("sharding-error")
    expect(card).to_have_attribute("data-kind", "indivisible", timeout=60_000)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    facts = page.get_by_test_id("sharding-error-facts")
    expect(facts).to_contain_text("array axis 0 of size 6")
    expect(facts).to_contain_text("split 4 ways")
    expect(page.get_by_test_id("sharding-error-fix")).to_contain_text("Pad axis 0 to 8")
    expect(page.get_by_test_id("error-kind")).to_be_visible()
    expect(page.get_by_test_id("sharding-spec")).to_have_value("P('y')")  # the form keeps it
    expect(page.get_by_test_id("sharding-array-shape")).to_have_value("6, 16")
    shoot_both_themes(page, screenshots, "sharding-indivisible", full_page=True)
    assert console_errors == []


def test_sub_axis_note_only_where_xla_prints_one(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    _open_default(page)
    page.get_by_test_id("example-select").select_option("transpose")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    groups = page.get_by_test_id("collectives-table").locator("code.groups")
    texts = groups.all_inner_texts()
    mesh_form = next(t for t in texts if "mesh[" in t)
    assert "device_ids=([2,2,2]T(0,2,1))" in mesh_form and "{'axis_0':(2)2}" in mesh_form
    note = page.get_by_test_id("collectives-mesh-note")
    expect(note).to_contain_text("device_ids=([2,2,2]T(0,2,1)) gives its device order")
    sub = page.get_by_test_id("collectives-subaxis-note")
    expect(sub).to_have_count(1)
    # axis_0 has size 4 in XLA's mesh: read as pre-size 2 x size 2 x rest 1
    expect(sub).to_have_text(
        "'axis_0':(2)2 is a sub-axis: axis_0 (size 4) read as 2 × 2 × 1, the groups run along "
        "the piece of size 2 after a pre-size of 2."
    )
    note.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "sharding-subaxis-light.png"))
    assert console_errors == []


def test_c16_broken_grid_is_the_input_and_the_error_names_the_refused_spec(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    expect_c16 = json.loads((CASES / "C16_indivisible_broken.expect.json").read_text())
    _open_default(page)
    page.get_by_test_id("example-select").select_option("c16_indivisible_broken")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    # the refused spec, as JAX's message prints it
    refused = "P(('batch', 'fsdp'),)"
    assert f"spec={refused}, memory_kind" in expect_c16["error_message"]
    spec_line = page.get_by_test_id("sharding-error-spec")
    expect(spec_line).to_contain_text(f"the spec JAX refused: NamedSharding(mesh, {refused})")
    expect(spec_line).to_contain_text(f"asked for inside f (line {expect_c16['error_user_line']})")
    # the grid: args[0], replicated with the default P() (the case defines no spec)
    assert "spec" not in expect_c16["snippet_names"]
    expect(page.get_by_test_id("device-grid")).to_have_attribute("data-spec", "P()")
    caption = page.get_by_test_id("sharding-grid-caption")
    expect(caption).to_contain_text("args[0], the input f receives")
    expect(caption).to_contain_text("the snippet defines no spec, so P(): the default, replicated")
    expect(page.get_by_test_id("sharding-grid-warning")).to_contain_text(
        f"This is the input, not {refused}"
    )
    page.get_by_test_id("sharding-error").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "sharding-c16-broken-light.png"))
    assert console_errors == []


def test_sharding_says_a_constraint_the_program_does_not_keep(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The constraint_not_kept example (cases/SH01, jax-ml/jax#26946): 17 rows constrained over
    8 devices inside jit. The page names the constraint's line and says it is held replicated
    (test_annotation_cases.py holds the same to plain JAX's output sharding); with 24 rows it
    is kept."""
    from e2e.browser import set_code
    from exhibits.registry import EXHIBITS

    code = EXHIBITS["sharding"].example_paths()["constraint_not_kept"].read_text()
    line = next(i for i, t in enumerate(code.splitlines(), 1) if "with_sharding_constraint(" in t)
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "sharding")
    set_code(page, code)
    run_and_wait(page)
    note = page.get_by_test_id("annotation")
    expect(note).to_have_count(1)
    expect(note).to_have_attribute("data-kept", "false")
    expect(note).to_have_attribute("data-line", str(line))
    expect(page.get_by_test_id("annotation-text")).to_contain_text(
        "holds it replicated (as f's output[0]): axis 0 of size 17 does not divide among the 8"
    )
    page.get_by_test_id("sharding-annotations").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "sharding-not-kept.png"))

    set_code(page, code.replace("vocab_size = 17", "vocab_size = 24"))
    run_and_wait(page)
    expect(page.get_by_test_id("annotation")).to_have_attribute("data-kept", "true")
    expect(page.get_by_test_id("annotations-count")).to_have_text("0 of 1 not kept")
    assert console_errors == []
