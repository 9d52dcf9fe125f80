"""'Compare with previous run' (issue 18, design 0043) in real Chromium: a snippet is run, edited
(sin -> cos, a Python variable renamed, one reduction more at the top, which renames every
variable of JAX's jaxpr below it) and run again; the compare view marks exactly the eqn whose
primitive changed, the one added and the outvars line, and not the eqns whose variables were
only renamed. The eqn lines are read from JAX's own jaxprs of the two snippets, computed here;
the page's line-by-line comparison and its unified diff are checked against ``jaxscope diff
tracing A.py B.py --print jaxpr --text`` on the same two files."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest
from jaxscope.sandbox.snippet import load_snippet
from playwright.sync_api import Locator, Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code
from testkit import run_cli

A = """import jax.numpy as jnp


def f(x):
    y = jnp.sin(x)
    return jnp.tanh(y * 2.0)


args = (jnp.ones(3),)
"""

B = """import jax.numpy as jnp


def f(x):
    total = jnp.sum(x)
    w = jnp.cos(x)
    return jnp.tanh(w * 2.0), total


args = (jnp.ones(3),)
"""


def rows(page: Page) -> list[tuple[str, str, str, str]]:
    """The compare table's rows: (kind, renamed, previous line, this line), read in one go."""
    expect(page.get_by_test_id("compare-table")).to_be_visible()
    got = page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="compare-row"]')].map((r) => {
            const cells = r.querySelectorAll('td.text');
            return [r.dataset.kind, r.dataset.renamed, cells[0].innerText, cells[1].innerText];
        })"""
    )
    return [(k, n, a, b) for k, n, a, b in got]


def cli_diff(tmp_path: Path) -> str:
    (tmp_path / "a.py").write_text(A)
    (tmp_path / "b.py").write_text(B)
    proc = run_cli(
        "diff",
        "tracing",
        str(tmp_path / "a.py"),
        str(tmp_path / "b.py"),
        "--print",
        "jaxpr",
        "--text",
    )
    assert proc.returncode == 1, proc.stderr
    return proc.stdout


def marks(row: Locator) -> list[str]:
    return [m.strip() for m in row.locator("mark").all_inner_texts()]


def test_compare_marks_the_changed_eqn_and_not_the_renamed_ones(
    page: Page, console_errors: list[str], screenshots: Path, tmp_path: Path
) -> None:
    sa, sb = load_snippet(A), load_snippet(B)
    ja = str(jax.make_jaxpr(sa.f)(*sa.args)).split("\n")
    jb = str(jax.make_jaxpr(sb.f)(*sb.args)).split("\n")
    # JAX's own lines: A is header, sin, mul, tanh, in; B adds reduce_sum first.
    assert [ln.split(" = ")[-1].split()[0] for ln in ja[1:4]] == ["sin", "mul", "tanh"]
    assert [ln.split(" = ")[-1].split("[")[0].split()[0] for ln in jb[1:5]] == [
        "reduce_sum",
        "cos",
        "mul",
        "tanh",
    ]

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_exhibit(page, "tracing")
    set_code(page, A)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    # One run: nothing to compare with yet.
    expect(page.get_by_test_id("compare-open")).to_have_count(0)
    set_code(page, B)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    # The button sits in the run's header row, beside Download; the exhibit tabs do not move.
    tab_box = page.get_by_test_id("exhibit-tracing").bounding_box()
    page.screenshot(path=str(screenshots / "compare-button-light.png"))
    page.get_by_test_id("compare-open").click()
    dialog = page.get_by_test_id("compare-dialog")
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("compare-tab-jaxpr")).to_have_attribute("aria-selected", "true")
    got = rows(page)
    assert got == [
        ("same", "false", ja[0], jb[0]),
        ("added", "false", "", jb[1]),  # reduce_sum: only now
        ("changed", "false", ja[1], jb[2]),  # sin -> cos
        ("same", "true", ja[2], jb[3]),  # mul: its variables renamed only
        ("same", "true", ja[3], jb[4]),  # tanh: renamed only
        ("changed", "false", ja[4], jb[5]),  # in (d,) -> in (e, b)
    ]
    changed = page.get_by_test_id("compare-row").nth(2)
    # Only the primitive is marked: b (sin's outvar then, cos's now) is the same variable.
    assert marks(changed) == ["sin", "cos"]
    expect(page.get_by_test_id("compare-counts")).to_contain_text("2 changed")
    expect(page.get_by_test_id("compare-counts")).to_contain_text("1 only now")
    expect(page.get_by_test_id("compare-counts")).to_contain_text(
        "2 the same with variables renamed"
    )
    dialog.screenshot(path=str(screenshots / "compare-jaxpr-light.png"))

    # Line by line, names counting: the lines jaxscope diff marks, - and + alike.
    cli = cli_diff(tmp_path)
    cli_minus = [
        ln[1:] for ln in cli.split("\n") if ln.startswith("-") and not ln.startswith("---")
    ]
    cli_plus = [ln[1:] for ln in cli.split("\n") if ln.startswith("+") and not ln.startswith("+++")]
    page.get_by_test_id("compare-mode-text").check()
    text_rows = rows(page)
    assert [r[2] for r in text_rows if r[0] in ("changed", "removed")] == cli_minus
    assert [r[3] for r in text_rows if r[0] in ("changed", "added")] == cli_plus
    # ...which marks the two renamed eqns the structural view leaves alone.
    assert ja[2] in cli_minus and ja[3] in cli_minus

    # The unified diff is jaxscope diff's output, but for the two names in its header.
    page.get_by_test_id("compare-mode-unified").check()
    page.get_by_test_id("compare-unified-export-copy").click()
    unified = page.evaluate("navigator.clipboard.readText()")
    want = cli.replace(f"--- {tmp_path / 'a.py'}\n", "--- previous run\n").replace(
        f"+++ {tmp_path / 'b.py'}\n", "+++ this run\n"
    )
    assert unified + "\n" == want

    # The snippet itself, line by line; Escape closes the view.
    page.get_by_test_id("compare-tab-snippet").click()
    page.get_by_test_id("compare-mode-text").check()
    snippet_rows = rows(page)
    left = [r[2] for r in snippet_rows if r[0] != "same"]
    right = [r[3] for r in snippet_rows if r[0] != "same"]
    assert "    y = jnp.sin(x)" in left and "    w = jnp.cos(x)" in right
    assert "import jax.numpy as jnp" not in left
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)

    # Dark theme: the same view.
    page.get_by_test_id("theme-toggle").click()
    page.get_by_test_id("compare-open").click()
    page.get_by_test_id("compare-tab-jaxpr").click()
    page.get_by_test_id("compare-mode-structural").check()
    expect(page.get_by_test_id("compare-row").first).to_be_visible()
    page.get_by_test_id("compare-dialog").screenshot(
        path=str(screenshots / "compare-jaxpr-dark.png")
    )
    page.screenshot(path=str(screenshots / "compare-page-dark.png"))
    page.get_by_test_id("compare-close").click()
    page.get_by_test_id("theme-toggle").click()
    assert page.get_by_test_id("exhibit-tracing").bounding_box() == tab_box
    assert console_errors == []


def test_stations_compares_stablehlo_optimized_hlo_and_outputs(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    sa, sb = load_snippet(A), load_snippet(B)
    out_a = float(jax.jit(sa.f)(*sa.args)[0])
    out_b = float(jax.jit(sb.f)(*sb.args)[0][0])
    open_exhibit(page, "stations")
    set_code(page, A)
    run_and_wait(page)
    set_code(page, B)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    page.get_by_test_id("compare-open").click()
    for tab in ("jaxpr", "stablehlo", "compiled", "output", "snippet"):
        expect(page.get_by_test_id(f"compare-tab-{tab}")).to_be_visible()
    expect(page.get_by_test_id("compare-tab-cache_key")).to_have_count(0)

    # StableHLO: JAX's lowering of the two functions, sine then, cosine now.
    page.get_by_test_id("compare-tab-stablehlo").click()
    lowered_a = jax.jit(sa.f).lower(*sa.args).as_text()
    lowered_b = jax.jit(sb.f).lower(*sb.args).as_text()
    got = rows(page)
    sine = [r for r in got if "stablehlo.sine" in r[2]]
    assert len(sine) == 1 and sine[0][0] in ("changed", "removed")
    assert any("stablehlo.cosine" in r[3] and r[0] in ("changed", "added") for r in got)
    assert [r[2] for r in got if r[2] != "" or r[0] != "added"] == lowered_a.split("\n")
    assert [r[3] for r in got if r[3] != "" or r[0] != "removed"] == lowered_b.split("\n")

    page.get_by_test_id("compare-tab-compiled").click()
    compiled = rows(page)
    assert any("cosine" in r[3] for r in compiled if r[0] in ("changed", "added"))

    # The outputs: JAX's values of the two functions here.
    page.get_by_test_id("compare-tab-output").click()
    outs = rows(page)
    before = "\n".join(r[2] for r in outs)
    after = "\n".join(r[3] for r in outs)
    assert f"{out_a:.6f}"[:6] in before and f"{out_b:.6f}"[:6] in after
    assert any(r[0] != "same" for r in outs)
    page.get_by_test_id("compare-dialog").screenshot(
        path=str(screenshots / "compare-stations-output.png")
    )
    page.get_by_test_id("compare-close").click()
    assert console_errors == []


def test_cache_key_compares_the_keys(page: Page, console_errors: list[str]) -> None:
    open_exhibit(page, "cache_key")
    set_code(page, A)
    run_and_wait(page)
    set_code(page, B)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    page.get_by_test_id("compare-open").click()
    page.get_by_test_id("compare-tab-cache_key").click()
    page.get_by_test_id("compare-mode-text").check()
    got = rows(page)
    key = got[0]
    # Another program: another key, in JAX's own form jit_f-<sha256>.
    assert (
        key[0] == "changed"
        and key[2].startswith("key: jit_f-")
        and key[3].startswith("key: jit_f-")
    )
    assert key[2] != key[3]
    # The ingredients that did not change (the JAX version, the backend) are the same lines.
    assert any(r[0] == "same" for r in got[1:])
    assert console_errors == []


BIG = """import jax.numpy as jnp


def f(x):
    for _ in range({n}):
        x = jnp.{op}(x) * 0.5
    return x


args = (jnp.ones(4),)
"""


@pytest.mark.xdist_group("real_programs")  # a real program (docs/design/0049-test-time.md)
# 1,500 sines: a module of ~350 KB, past the 256 KiB summary; make test-all also runs the 3,000
# of ~700 KB (design 0076)
@pytest.mark.parametrize("n", [1500, pytest.param(3000, marks=pytest.mark.full)])
def test_a_stablehlo_fetched_on_demand_is_compared_whole(
    page: Page, console_errors: list[str], tmp_path: Path, n: int
) -> None:
    """export streams a module over 256 KiB as its first lines (design 0023): the page fetches the
    whole text once the run ends, so the previous run's module is whole when compared."""
    from exhibits.export.events import MODULE_SUMMARY_BYTES

    def code(op: str) -> str:
        return BIG.replace("{op}", op).replace("{n}", str(n))

    def printed(op: str) -> str:
        path = tmp_path / f"{op}.py"
        path.write_text(code(op))
        proc = run_cli("run", "export", str(path), "--print", "stablehlo")
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.removesuffix("\n")

    # `jaxscope run --print` asks for every detail: its text is the whole module.
    want_a, want_b = printed("sin"), printed("cos")
    assert len(want_a.encode()) > MODULE_SUMMARY_BYTES  # streamed to the page as a summary
    open_exhibit(page, "export")
    set_code(page, code("sin"))
    run_and_wait(page)
    set_code(page, code("cos"))
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    page.get_by_test_id("compare-open").click()
    page.get_by_test_id("compare-tab-stablehlo").click()
    page.get_by_test_id("compare-mode-text").check()
    expect(page.get_by_test_id("compare-incomplete")).to_have_count(0)
    page.get_by_test_id("compare-changes-only").uncheck()
    page.get_by_test_id("compare-show-all").click()
    got = rows(page)
    assert [r[2] for r in got if r[0] != "added"] == want_a.split("\n")
    assert [r[3] for r in got if r[0] != "removed"] == want_b.split("\n")
    assert sum(1 for r in got if "stablehlo.sine" in r[2] and r[0] != "same") == n
    assert console_errors == []
