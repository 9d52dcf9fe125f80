"""The xla_passes exhibit in real Chromium: the default example (an MLP layer with a softmax)
shows as many passes as a plain ``compile(compiler_options=...)`` dumps here, as many changed ones
as the dump's texts change, and the fusions of ``Compiled.as_text()``; picking a fusion's row
shows the pass that created it, with its diff and its HLO text fetched on demand; ticking "every
pass" lists them all; a kernel's LLVM IR opens. Screenshots in the light and dark themes."""

from __future__ import annotations

import itertools
import re
import tempfile
from pathlib import Path
from typing import Any

import jax
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes
from exhibits.registry import EXHIBITS

EXAMPLE = EXHIBITS["xla_passes"].example_paths()[EXHIBITS["xla_passes"].default_example]


def plain_dump() -> tuple[int, int, set[str]]:
    """Plain JAX: the number of pass snapshots, how many differ from the text before, and the
    fusion instructions of ``Compiled.as_text()``."""
    namespace: dict[str, Any] = {}
    exec(compile(EXAMPLE.read_text(), SNIPPET_FILENAME, "exec"), namespace)
    with tempfile.TemporaryDirectory() as directory:
        compiled = (
            jax.jit(namespace["f"])
            .lower(*namespace["args"])
            .compile(compiler_options={"xla_dump_to": directory, "xla_dump_hlo_pass_re": ".+"})
        )
        files = list(Path(directory).iterdir())
        (baseline,) = [p for p in files if p.name.endswith(".before_optimizations.txt")]
        snaps = sorted((int(p.name.split(".")[2]), p) for p in files if ".after_" in p.name)
        texts = [baseline.read_text()] + [p.read_text() for _, p in snaps]
    changed = sum(a != b for a, b in itertools.pairwise(texts))
    fusions = set(
        re.findall(r"^\s+(?:ROOT )?%([\w.\-]+) = \S+ fusion\(", str(compiled.as_text()), re.M)
    )
    return len(snaps), changed, fusions


def test_xla_passes_walks_the_passes_and_finds_the_fusions(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "xla_passes")
    set_theme(page, "light")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    page.screenshot(path=str(screenshots / "xla_passes-top-light.png"))
    count, changed, fusions = plain_dump()
    expect(page.get_by_test_id("xp-pass-count")).to_have_text(f"{count} passes")
    expect(page.get_by_test_id("xp-changed-count")).to_have_text(f"{changed} changed the module")
    expect(page.get_by_test_id("xp-last-is-compiled")).to_have_text(
        "last snapshot = Compiled.as_text()"
    )
    # the page opens on the last pass that added, removed or rewrote an instruction, not on the
    # scheduler's pipeline-start (its diff only reorders lines: "+0 −0")
    expect(page.get_by_test_id("xp-pass-name")).not_to_have_text(re.compile("pipeline-start"))
    expect(page.get_by_test_id("xp-diff-counts")).not_to_contain_text("+0 appeared")
    fusion_rows = page.get_by_test_id("xp-fusion-row")
    expect(fusion_rows).to_have_count(len(fusions))
    assert {fusion_rows.nth(i).get_attribute("data-name") for i in range(len(fusions))} == fusions

    # the fusion pass created add_tanh_fusion: pick it, its diff and text come on demand
    row = page.locator("[data-testid=xp-fusion-row][data-name=add_tanh_fusion]")
    expect(row.get_by_test_id("xp-fusion-pass")).to_contain_text("fusion")
    row.click()
    expect(page.get_by_test_id("xp-pass-name")).to_have_text("fusion")
    expect(page.get_by_test_id("xp-diff-counts")).to_contain_text("appeared")
    expect(page.get_by_test_id("xp-diff")).to_contain_text("+  %add_tanh_fusion = ")
    expect(page.get_by_test_id("xp-hlo")).to_contain_text("%add_tanh_fusion = f32[8,32]")
    # linked: an instruction selects the snippet line of its stack frame, and back
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    rows = page.get_by_test_id("xp-hlo").locator(".row")
    rows.filter(has_text="%add_tanh_fusion = f32[8,32]").click()
    expect(selected).to_have_text("    h = jnp.tanh(x @ w + b)")
    page.get_by_test_id("editor").locator(".cm-line", has_text="jax.nn.softmax(h").click()
    lit = rows.locator("xpath=self::*[contains(@class, 'hl')]")
    expect(lit.filter(has_text="%subtract_exponential_fusion = ")).to_have_count(1)
    expect(lit.filter(has_text="%add_tanh_fusion = ")).to_have_count(0)
    # the table stops at the changed passes (and the first); every pass on a tick
    table_rows = page.locator("[data-testid^=xp-row-]")
    expect(table_rows).to_have_count(changed + 1)
    page.get_by_test_id("xp-pass").scroll_into_view_if_needed()
    shoot_both_themes(page, screenshots, "xla_passes", full_page=True)

    page.get_by_test_id("xp-show-all").check()
    expect(page.get_by_test_id("xp-passes").locator(".ui-count").first).to_have_text(
        f"{count} of {count}"
    )
    # the slider's next stop after `fusion` is fusion-wrapper, with every pass shown the
    # unchanged pass right after it
    page.get_by_test_id("xp-next").click()
    expect(page.get_by_test_id("xp-pass-name")).not_to_have_text("fusion")
    page.get_by_test_id("xp-kernel").select_option("add_tanh_fusion_kernel_module")
    expect(page.get_by_test_id("xp-llvm-text")).to_contain_text("define")
    page.get_by_test_id("xp-llvm").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "xla_passes-llvm-light.png"), full_page=True)
    assert console_errors == []


GPT = Path(__file__).resolve().parent.parent / "examples" / "real" / "gpt_stack.py"
# What the page may receive for the 12-layer GPT stack until run_finished: the summaries of its
# ~200 passes, its 370 fusions and the kernels' sizes (design 0029 measured 171 KB), not the
# ~10 MB of texts and diffs that --json carries.
MAX_STREAMED_BYTES = 600_000


def test_the_gpt_stack_streams_summaries_and_fetches_a_pass_on_demand(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    frames: list[str | bytes] = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda data: frames.append(data)))
    open_exhibit(page, "xla_passes")
    set_code(page, GPT.read_text())
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=240_000)
    # the run's stream: the frames up to its terminal event (the page then asks for the details
    # near the stepper's cursor and of what it shows)
    end = next(i for i, f in enumerate(frames) if '"run_finished"' in str(f))
    streamed = sum(len(f) for f in frames[: end + 1])
    assert streamed < MAX_STREAMED_BYTES, streamed
    print(
        f"gpt_stack: {streamed} bytes streamed until run_finished, {len(frames[: end + 1])} frames"
    )

    namespace: dict[str, Any] = {}
    exec(compile(GPT.read_text(), SNIPPET_FILENAME, "exec"), namespace)
    text = str(jax.jit(namespace["f"]).lower(*namespace["args"]).compile().as_text())
    fusions = set(re.findall(r"^\s+(?:ROOT )?%([\w.\-]+) = \S+ fusion\(", text, re.M))
    expect(page.get_by_test_id("xp-fusion-row")).to_have_count(len(fusions))
    expect(page.get_by_test_id("xp-last-is-compiled")).to_have_text(
        "last snapshot = Compiled.as_text()"
    )
    # a fusion the fusion pass made: its pass's text and diff come on demand
    row = page.get_by_test_id("xp-fusion-row").filter(
        has=page.get_by_test_id("xp-fusion-pass").filter(has_text=re.compile(r"^fusion "))
    )
    name = row.first.get_attribute("data-name")
    row.first.click()
    expect(page.get_by_test_id("xp-pass-name")).to_have_text("fusion")
    expect(page.get_by_test_id("xp-hlo")).to_contain_text(f"%{name} = ", timeout=30_000)
    expect(page.get_by_test_id("xp-diff")).to_contain_text(f"+  %{name} = ")
    page.get_by_test_id("xp-pass").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "xla_passes-gpt-light.png"))
    assert console_errors == []
