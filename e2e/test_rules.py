"""The rules exhibit in real Chromium: the counts shown are the sizes of JAX's tables (as the
CLI prints them from the same sandbox, and bounded by a fresh ``import jax`` process's tables and
this process's), searching a primitive shows its rules with the registering source line, the
"missing transpose" filter keeps exactly the primitives without one, and the platform filter
shows the generic fallback. Screenshots in light and dark themes."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import jax
import pytest
from jax._src.interpreters import ad, mlir
from jaxscope.internals.rule_tables import import_modules, known_primitives
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from e2e.replay import replay_runs
from exhibits.registry import EXHIBITS

REPO = Path(__file__).resolve().parents[1]
GOLDEN = json.loads((REPO / "exhibits" / "rules" / "golden" / "tables.json").read_text())
SITE = Path(jax.__file__).resolve().parents[1]


def _import_as_the_worker_does() -> None:
    """The tables only grow with imports: load what a worker has loaded when the rules probe
    tabulates (every exhibit's probe, then the modules the probe imports: flax included), so
    this process's table sizes bound the worker's from above."""
    for exhibit_id, exhibit in EXHIBITS.items():
        # Another kind of worker's probe imports its own venv's libraries (tensorflow, torch),
        # which this venv lacks; the rules probe's JAX worker never loads them either.
        if exhibit.worker == "jax":
            importlib.import_module(f"exhibits.{exhibit_id}.probe")
    import_modules()


@pytest.fixture(scope="module")
def cli_counts() -> dict[str, int]:
    _import_as_the_worker_does()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "jaxscope"), "run", "rules", "-", "--print", "counts"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    counts: dict[str, int] = json.loads(done.stdout)
    return counts


def test_rules_matrix_counts_search_and_filters(
    page: Page, console_errors: list[str], screenshots: Path, cli_counts: dict[str, int]
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "rules")
    set_theme(page, "light")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()

    # Counts: the sizes of JAX's tables.
    for column in ("jvp", "transpose", "batching", "lowering", "cpu", "cuda", "rocm", "tpu"):
        shown = int(page.get_by_test_id(f"count-{column}").get_attribute("data-count") or "-1")
        assert shown == cli_counts[column], column
    jvp = int(page.get_by_test_id("count-jvp").get_attribute("data-count") or "-1")
    assert GOLDEN["sizes"]["ad.primitive_jvps"] <= jvp <= len(ad.primitive_jvps)
    lowering = int(page.get_by_test_id("count-lowering").get_attribute("data-count") or "-1")
    assert GOLDEN["sizes"]["mlir._lowerings"] <= lowering <= len(mlir._lowerings)
    rows = page.get_by_test_id("rule-row")
    expect(rows).to_have_count(cli_counts["primitives"])
    shoot_both_themes(page, screenshots, "rules-top")

    # Search a primitive: its row, then its rules with the registering lines in place.
    page.get_by_test_id("rules-search").fill("psum")
    psum = page.locator("[data-testid=rule-row][data-primitive=psum]")
    expect(psum).to_be_visible()
    for column in ("jvp", "transpose", "batching", "lowering"):
        expect(psum.get_by_test_id(f"cell-{column}")).to_have_attribute("data-has", "yes")
    psum.get_by_test_id("cell-lowering").locator("button").click()
    detail = page.get_by_test_id("rule-detail")
    expect(detail).to_have_attribute("data-primitive", "psum")
    lowering_row = detail.get_by_test_id("detail-lowering")
    location = lowering_row.get_by_test_id("detail-location").inner_text()
    file, line = location.rsplit(":", 1)
    text = (SITE / file).read_text().splitlines()[int(line) - 1].strip()
    assert "register_lowering" in text
    expect(lowering_row.get_by_test_id("detail-source")).to_contain_text(text)
    jvp_source = detail.get_by_test_id("detail-jvp").get_by_test_id("detail-source").inner_text()
    assert "psum_p" in jvp_source and "register_lowering" not in jvp_source
    detail.scroll_into_view_if_needed()
    shoot_both_themes(page, screenshots, "rules-psum")

    # Missing transpose: exactly the primitives without one (primitives - transpose count).
    page.get_by_test_id("rules-search").fill("")
    page.get_by_test_id("rules-missing").select_option("transpose")
    expected = cli_counts["primitives"] - cli_counts["transpose"]
    expect(rows).to_have_count(expected)
    expect(page.get_by_test_id("rules-shown")).to_contain_text(f"{expected} of")
    expect(page.get_by_test_id("shown-transpose")).to_have_text("0")
    names = set(
        page.locator("[data-testid=rule-row]").evaluate_all(
            "rs => rs.map(r => r.dataset.primitive)"
        )
    )
    with_transpose = {p.name for p in ad.primitive_transposes} | {
        p.name for p in ad.fancy_transposes
    }
    assert "sin" in names and "mul" not in names
    # A name two primitives share (Pallas's kernel `swap` beside the state `swap`) may be shown
    # for the one without a transpose rule.
    known = [p.name for p in known_primitives()]
    shared = {n for n in known if known.count(n) > 1}
    assert not (names - shared) & with_transpose
    shoot_both_themes(page, screenshots, "rules-missing-transpose")

    # Platform cpu: sin lowers with the generic rule, dot_general with its own CPU rule.
    page.get_by_test_id("rules-missing").select_option("")
    page.get_by_test_id("rules-platform").select_option("cpu")
    expect(page.get_by_test_id("head-cuda")).to_have_count(0)
    sin = page.locator("[data-testid=rule-row][data-primitive=sin]")
    expect(sin.get_by_test_id("cell-cpu")).to_have_attribute("data-has", "generic")
    dot = page.locator("[data-testid=rule-row][data-primitive=dot_general]")
    expect(dot.get_by_test_id("cell-cpu")).to_have_attribute("data-has", "yes")
    # Only the jaxpr's primitives.
    page.get_by_test_id("rules-only-used").check()
    only_used = set(
        page.locator("[data-testid=rule-row]").evaluate_all(
            "rs => rs.map(r => r.dataset.primitive)"
        )
    )
    assert only_used == set(GOLDEN["example_primitives"])
    assert console_errors == []


def test_rules_matrix_scrolls_inside_its_panel_at_1440px(
    page: Page, console_errors: list[str]
) -> None:
    # A layout test: the page is answered with the default example's recorded run (its golden;
    # e2e/replay.py), the other tests here drive a real worker.
    page.set_viewport_size({"width": 1440, "height": 900})
    answered = replay_runs(page, "rules", EXHIBITS["rules"].default_example)
    open_exhibit(page, "rules")
    run_and_wait(page)
    assert len(answered) == 1, answered
    table = page.get_by_test_id("rules-table")
    expect(table).to_be_visible()
    box = table.locator("xpath=..").evaluate(
        "el => { const r = el.getBoundingClientRect();"
        " return {right: r.right, scroll: el.scrollWidth, client: el.clientWidth}; }"
    )
    assert box["right"] <= 1440, box  # the scroll box is inside the window
    assert box["scroll"] > box["client"], box  # the platform columns scroll inside it
    assert page.evaluate("document.documentElement.scrollWidth") <= 1440  # nothing clipped
    last = table.locator("thead th").last
    last.scroll_into_view_if_needed()
    head = last.bounding_box()
    assert head is not None and head["x"] + head["width"] <= 1440 + 1, head
    # the primitive column stays in view while the platform columns scroll
    name = table.locator("thead th").first.bounding_box()
    assert name is not None and 0 <= name["x"] < 1440
    assert console_errors == []


NO_RULE = """from jax.extend.core import Primitive

p = Primitive("abstract_only")
p.def_abstract_eval(lambda x: x)


def f(x):
    return p.bind(x)


args = (1.0,)
"""


def test_a_primitive_with_no_rule_is_a_row_of_empty_cells(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The snippet's own primitive, in no rule table: "only in f" shows its row, every cell
    empty, and its detail says none for each column."""
    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "rules")
    set_code(page, NO_RULE)
    run_and_wait(page)
    page.get_by_test_id("rules-only-used").check()
    rows = page.locator("[data-testid=rule-row]")
    expect(rows).to_have_count(1)
    row = rows.first
    expect(row).to_have_attribute("data-primitive", "abstract_only")
    cells = row.locator("td[data-has]")
    n = cells.count()
    assert n >= 8
    for k in range(n):
        expect(cells.nth(k)).to_have_attribute("data-has", "no")
    row.get_by_test_id("row-name").click()
    detail = page.get_by_test_id("rule-detail")
    expect(detail.get_by_test_id("detail-missing")).to_have_count(n)
    page.screenshot(path=str(screenshots / "rules-no-rule-light.png"), full_page=False)
    assert console_errors == []


def test_a_snippet_add_is_its_own_row_and_no_abstract_eval_keeps_the_table(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The snippet's ``Primitive("add")``: "only in f" shows one row, "add (your Primitive)"
    with empty cells (not JAX's add with its rules). A primitive with no abstract eval: the
    table is shown (its row there) beside JAX's NotImplementedError."""
    from exhibits.rules.test_rules import NO_ABSTRACT_EVAL, OWN_ADD

    page.set_viewport_size({"width": 1500, "height": 1000})
    open_exhibit(page, "rules")
    set_code(page, OWN_ADD)
    run_and_wait(page)
    page.get_by_test_id("rules-only-used").check()
    rows = page.locator("[data-testid=rule-row]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-own", "true")
    expect(rows.first.get_by_test_id("row-name")).to_have_text("●add (your Primitive)")
    cells = rows.first.locator("td[data-has]")
    for k in range(cells.count()):
        expect(cells.nth(k)).to_have_attribute("data-has", "no")
    page.screenshot(path=str(screenshots / "rules-own-add-light.png"), full_page=False)

    set_code(page, NO_ABSTRACT_EVAL)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("error-class")).to_have_text("NotImplementedError", timeout=60000)
    expect(page.get_by_test_id("error-message")).to_contain_text("Abstract evaluation for 'myop'")
    expect(page.get_by_test_id("rules-table")).to_be_visible()
    page.get_by_test_id("rules-only-used").uncheck()  # nothing is used: no jaxpr was traced
    mine = page.locator("[data-testid=rule-row][data-own=true]")
    expect(mine).to_have_count(1)
    expect(mine).to_have_attribute("data-primitive", "myop")
    page.screenshot(path=str(screenshots / "rules-no-abstract-eval-light.png"), full_page=False)
    assert console_errors == []
