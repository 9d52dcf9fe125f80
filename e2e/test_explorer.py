"""End-to-end tests in real Chromium against a real `jaxscope serve`.

They drive the page as a user does (type in the editor, press Run, click an eqn) and compare what
the page shows with JAX itself, computed in this test process. Screenshots go to
``e2e/screenshots/`` (we open and judge them; they are not pixel baselines).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax
import pytest
from jaxscope.local_server import serving
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.server.frames import frame_objects
from playwright.sync_api import Page, expect

from e2e.browser import (
    RUN_TIMEOUT_MS,
    editor_text,
    open_exhibit,
    run_and_wait,
    set_code,
    set_theme,
    shoot_both_themes,
)
from e2e.replay import replay_runs
from exhibits.registry import EXHIBITS
from testkit import sample

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "cases"

TYPED = """import jax.numpy as jnp

def f(x, y):
z = jnp.sin(x) * 2.0
w = z + y
return jnp.sum(w)

args = (jnp.ones(3), 1.0)
"""
# What the editor holds after typing TYPED: CodeMirror indents the body lines by itself
# (4-space indent unit), so the typed text has no leading spaces (toolchain pitfall 5).
TYPED_SOURCE = """import jax.numpy as jnp

def f(x, y):
    z = jnp.sin(x) * 2.0
    w = z + y
    return jnp.sum(w)

args = (jnp.ones(3), 1.0)
"""


def unfolded_jaxpr_text(page: Page) -> str:
    fold = page.get_by_test_id("jaxpr-fold")
    if fold.count() and fold.is_checked():
        fold.uncheck()
    return page.get_by_test_id("jaxpr-text").inner_text()


def jaxpr_of(source: str) -> str:
    snippet = load_snippet(source)
    return str(jax.make_jaxpr(snippet.f, static_argnums=snippet.static_argnums)(*snippet.args))


def test_type_run_see_jaxpr_click_eqn(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """Type a function, run it, see JAX's jaxpr, click an eqn: its source line lights up."""
    open_exhibit(page, "tracing")
    content = page.get_by_test_id("editor").locator(".cm-content")
    content.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    for line in TYPED.splitlines():
        page.keyboard.type(line)
        page.keyboard.press("Escape")  # close an autocomplete popup that could swallow Enter
        page.keyboard.press("Enter")
        if line.startswith("return"):
            page.keyboard.press("Backspace")  # dedent by one indent unit after the body
    assert editor_text(page).strip() == TYPED_SOURCE.strip()

    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert unfolded_jaxpr_text(page).strip() == jaxpr_of(TYPED_SOURCE)

    # The eqns as recorded: sin, mul, convert_element_type (the weak-typed y), add, reduce_sum.
    expect(page.get_by_test_id("eqn-count")).to_have_text("5")
    # Clicking the `sin` eqn (index 0, recorded on line 4) highlights line 4 in the editor.
    page.get_by_test_id("eqn-0").click()
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_have_text("    z = jnp.sin(x) * 2.0")
    # The `add` eqn (index 3) comes from line 5.
    page.get_by_test_id("eqn-3").click()
    expect(selected).to_have_text("    w = z + y")
    page.screenshot(path=str(screenshots / "tracing-typed.png"), full_page=True)
    assert console_errors == []


def test_tracer_error_highlights_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """C01: a Python `if` on a traced value under jit -> TracerBoolConversionError, line 9."""
    expect_case = json.loads((CASES / "C01_escape_jit_broken.expect.json").read_text())
    source = (CASES / "C01_escape_jit_broken.py").read_text()
    open_exhibit(page, "tracing")
    set_code(page, source)
    run_and_wait(page)

    panel = page.get_by_test_id("error-panel")
    expect(panel).to_be_visible()
    expect(page.get_by_test_id("error-kind")).to_have_attribute("data-kind", "tracer_error")
    expect(page.get_by_test_id("error-class")).to_have_text(expect_case["error_class"])
    expect(page.get_by_test_id("error-message")).to_contain_text(expect_case["error_first_line"])
    expect(page.get_by_test_id("error-line")).to_contain_text(str(expect_case["error_user_line"]))
    expect(page.get_by_test_id("error-fix")).to_contain_text("static")
    error_line = page.get_by_test_id("editor").locator(".cm-line.cm-js-error-line")
    expect(error_line).to_have_count(1)
    offending = source.splitlines()[expect_case["error_user_line"] - 1]
    expect(error_line).to_have_text(offending)
    # Nothing lost: the editor still holds the user's text.
    assert editor_text(page).strip() == source.strip()
    page.screenshot(path=str(screenshots / "tracing-tracer-error.png"), full_page=True)
    assert console_errors == []


def test_print_fires_once_then_call_again(page: Page, console_errors: list[str]) -> None:
    """C17: a Python print inside jit prints a tracer while tracing, and nothing on a cache hit;
    a new shape traces again."""
    expect_case = json.loads((CASES / "C17_print_broken.expect.json").read_text())
    open_exhibit(page, "tracing")
    set_code(page, (CASES / "C17_print_broken.py").read_text())
    run_and_wait(page)
    assert unfolded_jaxpr_text(page).strip() == expect_case["jaxpr"]
    expect(page.get_by_test_id("trace-prints")).to_contain_text("JitTracer(float32[3])")

    page.get_by_test_id("call-same").click()
    run_and_wait(page)
    expect(page.get_by_test_id("call-row-1")).to_be_visible()
    expect(page.get_by_test_id("call-sentence-1")).to_contain_text("no retrace")

    page.get_by_test_id("call-shape").click()
    run_and_wait(page)
    expect(page.get_by_test_id("call-sentence-2")).to_contain_text("traced again")
    expect(page.get_by_test_id("call-row-2")).to_contain_text("JitTracer(float32[4])")
    # The row says which argument leaves differ from call #1's, by name: both arrays grew a row.
    expect(page.get_by_test_id("call-args-note-2")).to_contain_text(
        "2 of 2 leaves changed since call #1: w: f32[3] → f32[4]; g: f32[3] → f32[4]"
    )
    expect(page.get_by_test_id("call-args-2").locator("[data-changed=true]")).to_have_count(2)
    assert console_errors == []


def test_four_stations_show_all_artefacts(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """C24 in the stations exhibit: jaxpr, StableHLO equal to Lowered.as_text(), compiled HLO,
    cost and memory tables, and the run on the device with both times."""
    source = (CASES / "C24_async_dispatch.py").read_text()
    snippet = load_snippet(source)
    lowered = jax.jit(snippet.f).trace(*snippet.args).lower()

    open_exhibit(page, "stations")
    set_code(page, source)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    for station in ("trace", "lower", "compile", "run"):
        expect(page.get_by_test_id(f"station-step-{station}")).to_have_attribute(
            "data-status", "done"
        )
    assert unfolded_jaxpr_text(page).strip() == jaxpr_of(source)
    stablehlo = page.get_by_test_id("stablehlo-text")
    expect(stablehlo).to_contain_text("stablehlo.dot_general")
    ops = page.get_by_test_id("stablehlo-text").locator("[data-testid^=op-line-]")
    shown = "\n".join(ops.all_inner_texts())
    assert shown.count("stablehlo.dot_general") == lowered.as_text().count("stablehlo.dot_general")
    assert shown.count("stablehlo.tanh") == 4
    # The figures are JAX's own: Compiled.cost_analysis() of the same program in this process.
    cost = lowered.compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    flops_row = page.get_by_test_id("cost-table").locator("tr", has_text="flops")
    expect(flops_row).to_contain_text(f"{int(cost['flops']):,}")
    # Every key XLA gave is a row labelled in words, the raw key kept in the cell's title.
    cost_table = page.get_by_test_id("cost-table")
    for key in cost:
        expect(cost_table.get_by_title(key, exact=True)).to_have_count(1)
    if "bytes accessed0{}" in cost:
        expect(cost_table).to_contain_text("bytes accessed, operand 0")
    expect(page.get_by_test_id("memory-table")).to_be_visible()
    expect(page.get_by_test_id("cost-caveats")).to_be_visible()
    expect(page.get_by_test_id("run-device")).to_contain_text("cpu", ignore_case=True)
    expect(page.get_by_test_id("dispatch-ms")).to_be_visible()
    expect(page.get_by_test_id("blocked-ms")).to_be_visible()
    expect(page.get_by_test_id("output-0")).to_contain_text("1000")
    expect(page.get_by_test_id("stage-timeline")).to_contain_text("backend_compile_duration")
    page.screenshot(path=str(screenshots / "stations-c24.png"), full_page=True)
    assert console_errors == []


def test_linking_source_eqn_and_ops(page: Page, console_errors: list[str]) -> None:
    """An eqn lights up its source line and the StableHLO ops lowered from it; an op lights up
    its source line; an editor line lights up its eqns."""
    open_exhibit(page, "stations")
    set_code(page, TYPED_SOURCE)
    run_and_wait(page)
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    ops = page.get_by_test_id("stablehlo-text").locator("[data-testid^=op-line-]")

    page.get_by_test_id("eqn-0").click()  # sin, line 4
    expect(selected).to_have_text("    z = jnp.sin(x) * 2.0")
    lit = ops.locator("xpath=self::*[contains(@class, 'hl')]")
    expect(lit.filter(has_text="stablehlo.sine")).to_have_count(1)
    expect(lit.filter(has_text="stablehlo.add")).to_have_count(0)

    ops.filter(has_text="stablehlo.add").first.click()  # lowered from `w = z + y`, line 5
    expect(selected).to_have_text("    w = z + y")

    page.get_by_test_id("editor").locator(".cm-line", has_text="return jnp.sum(w)").click()
    expect(page.get_by_test_id("eqn-4")).to_have_attribute("aria-pressed", "true")  # reduce_sum
    expect(page.get_by_test_id("eqn-0")).to_have_attribute("aria-pressed", "false")
    assert console_errors == []


# `make test` opens, runs and shoots (both themes) the default example of each exhibit that has no
# e2e file of its own (e2e/test_<id>.py, which renders its view with a real worker) and of a
# fixed, seeded sample of eight of the others; `make test-all` of every exhibit (~2.5 s each;
# testkit.py, design 0076).
_OWN_E2E = [e for e in sorted(EXHIBITS) if (ROOT / "e2e" / f"test_{e}.py").is_file()]
_SAMPLED = sample(_OWN_E2E, 8, key="test_every_exhibit_runs_its_default_example")


@pytest.mark.parametrize(
    "exhibit",
    [
        pytest.param(e, marks=pytest.mark.full) if e in _OWN_E2E and e not in _SAMPLED else e
        for e in sorted(EXHIBITS)
    ],
)
def test_every_exhibit_runs_its_default_example(
    page: Page, console_errors: list[str], screenshots: Path, exhibit: str
) -> None:
    """Each registered exhibit opens, runs its default example to the end, and renders; one
    run, its screenshot taken in the light theme and then in the dark one. The run's events are
    the example's recorded stream (its golden, which ``exhibits/test_goldens.py`` checks against
    a live run; ``e2e/replay.py``): this test is about the page, and each exhibit's own e2e
    tests run it through a real worker."""
    default = EXHIBITS[exhibit].default_example
    answered = replay_runs(page, exhibit, default)
    open_exhibit(page, exhibit)
    set_theme(page, "light")
    page.get_by_test_id("example-select").select_option(default)
    run_and_wait(page)
    assert len(answered) == 1, answered
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("narrative")).not_to_be_empty()
    # Every exhibit shows a jaxpr but dtypes (its lesson is the promotion table), prng (the key
    # tree its calls made), lazy_tensor (torch_xla's pending IR graph: no JAX there), pjrt_registry
    # (pjrt_registry.cpp with the branch marked), xla_cache (the loop's steps table), dynamo_bridge
    # (f's regions: XLA programs and host code) and export
    # (the exported StableHLO module), wrapped_fun (the default example's WrappedFun stack),
    # xla_passes (the HLO module after a pass), review (its findings), pallas (the kernel's jaxpr).
    main = {
        "dtypes": "promotion",
        "prng": "prng-tree",
        "lazy_tensor": "lazy-graph",
        "pjrt_registry": "pjrt-source",
        "xla_cache": "xla-steps",
        "dynamo_bridge": "dynamo-regions",
        "export": "module-text",
        "wrapped_fun": "wf-stack",
        "xla_passes": "xp-hlo",
        "review": "review-findings",
        "pallas": "kernel-jaxpr",
        # torch_spmd: its mesh of device ids (a torch worker: no JAX there).
        "torch_spmd": "spmd-mesh-grid",
        # seam: the picked step's crossings on two lanes, host and device (a torch worker).
        "seam": "seam-lanes",
        # pmap: its layers read from the real jaxpr (jit, shard_map, the body), highlighted text.
        "pmap": "pmap-layer-list",
    }.get(exhibit, "jaxpr-text")
    expect(page.get_by_test_id(main)).to_be_visible()
    shoot_both_themes(page, screenshots, exhibit)
    assert console_errors == []


def test_syntax_error_keeps_text_and_points_at_column(
    page: Page, console_errors: list[str]
) -> None:
    open_exhibit(page, "tracing")
    broken = "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x\n\nargs = (1.0,)\n"
    set_code(page, broken)
    run_and_wait(page)
    expect(page.get_by_test_id("error-kind")).to_have_attribute("data-kind", "syntax")
    expect(page.get_by_test_id("error-line")).to_contain_text("4")
    assert editor_text(page).strip() == broken.strip()
    assert console_errors == []


def test_permalink_reopens_exhibit_and_code(page: Page, console_errors: list[str]) -> None:
    open_exhibit(page, "stations")
    set_code(page, TYPED_SOURCE)
    run_and_wait(page)
    page.get_by_test_id("copy-link").click()
    link = page.url
    assert "#" in link
    other = page.context.new_page()
    other.goto(link)
    expect(other.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["stations"].title)
    expect(other.get_by_test_id("editor").locator(".cm-line").nth(3)).to_be_attached()
    assert editor_text(other).strip() == TYPED_SOURCE.strip()
    # A link never runs code by itself: the user reads it and presses Run.
    expect(other.get_by_test_id("link-notice")).to_be_visible()
    expect(other.get_by_test_id("stepper-position")).to_contain_text("no events")
    other.get_by_test_id("run").click()
    expect(other.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=30000)
    expect(other.get_by_test_id("link-notice")).to_have_count(0)
    assert console_errors == []


def test_permalink_keeps_the_exhibits_options(page: Page, console_errors: list[str]) -> None:
    """An option set in a view (the caches exhibit's preset) survives a copied link: the link
    carries every RunOptions field (issue 18: the preset was dropped)."""
    open_exhibit(page, "caches")
    preset = page.get_by_test_id("caches-preset")
    preset.select_option("new_shape")
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        re.compile(r"run_finished|run_failed"), timeout=30000
    )
    page.get_by_test_id("copy-link").click()
    other = page.context.new_page()
    other.goto(page.url)
    expect(other.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["caches"].title)
    expect(other.get_by_test_id("caches-preset")).to_have_value("new_shape")
    assert console_errors == []


BAD_INPUTS = {
    "invalid_snippet": "import jax.numpy as jnp\n\ndef g(x):\n    return x\n",
    "user_exception": "def f(x):\n    return {}[x]\n\nargs = (1.0,)\n",
    "worker_crashed": "import os\n\ndef f(x):\n    os._exit(3)\n\nargs = (1.0,)\n",
}


@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_input_gets_a_clear_error_and_keeps_the_text(
    page: Page, console_errors: list[str], kind: str
) -> None:
    """Bad input ends in a clear error panel; the editor keeps the text; the next run works."""
    source = BAD_INPUTS[kind]
    open_exhibit(page, "tracing")
    set_code(page, source)
    run_and_wait(page)
    expect(page.get_by_test_id("error-kind")).to_have_attribute("data-kind", kind)
    expect(page.get_by_test_id("error-message")).not_to_be_empty()
    assert editor_text(page).strip() == source.strip()
    set_code(page, TYPED_SOURCE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert console_errors == []


def test_cancel_a_running_loop(page: Page, console_errors: list[str]) -> None:
    """An endless loop shows progress; Cancel ends it as `cancelled` and the next run works."""
    loop = "def f(x):\n    while True:\n        pass\n\nargs = (1.0,)\n"
    open_exhibit(page, "tracing")
    set_code(page, loop)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("progress-stage")).to_contain_text("trace", timeout=RUN_TIMEOUT_MS)
    page.get_by_test_id("cancel").click()
    expect(page.get_by_test_id("error-kind")).to_have_attribute("data-kind", "cancelled")
    assert editor_text(page).strip() == loop.strip()
    set_code(page, TYPED_SOURCE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert console_errors == []


def test_selecting_an_eqn_scrolls_its_line_into_view(page: Page, console_errors: list[str]) -> None:
    """mlp_loss: f's eqns sit below the fold of the editor; selecting one brings its line in."""
    open_exhibit(page, "tracing")
    page.get_by_test_id("example-select").select_option("mlp_loss")
    run_and_wait(page)
    page.get_by_test_id("eqn-12").click()  # neg, the last eqn, from f's return line
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_be_in_viewport()
    expect(selected).to_contain_text("jnp.take_along_axis")
    assert console_errors == []


def test_example_picker_follows_the_editor_across_exhibits(page: Page) -> None:
    """The examples are shared: switching exhibits keeps naming the example in the editor."""
    open_exhibit(page, "tracing")
    page.get_by_test_id("example-select").select_option("rnn_scan")
    page.get_by_test_id("exhibit-stations").click()
    expect(page.get_by_test_id("example-select")).to_have_value("rnn_scan")
    set_code(page, TYPED_SOURCE)
    expect(page.get_by_test_id("example-select")).to_have_value("")


def test_loading_an_example_resets_the_exhibit_options(page: Page) -> None:
    """A stack typed for one example does not override the next example's own: loading an
    example starts from its settings (the transform_order chips go back to the snippet's)."""
    open_exhibit(page, "transform_order")
    page.get_by_test_id("example-select").select_option("per_example_grads")
    run_and_wait(page)
    first = "".join(page.get_by_test_id("chip-stack").inner_text().split())
    # The same chips, whatever whitespace the layout puts between them.
    same_chips = re.compile(r"\s*".join(re.escape(c) for c in first))
    page.get_by_test_id("chip-remove-0").click()
    expect(page.get_by_test_id("chip-stack")).not_to_have_text(same_chips)
    page.get_by_test_id("example-select").select_option("tall_wide_jacobian")
    page.get_by_test_id("example-select").select_option("per_example_grads")
    run_and_wait(page)
    expect(page.get_by_test_id("chip-stack")).to_have_text(same_chips)


def test_an_example_another_exhibit_lacks_gives_way_to_its_default(page: Page) -> None:
    """An untouched example the new exhibit does not offer is replaced by that exhibit's default
    example; the user's own code stays when switching."""
    open_exhibit(page, "tracing")
    page.get_by_test_id("example-select").select_option("mlp_loss")
    page.get_by_test_id("exhibit-custom_vjp").click()
    default = EXHIBITS["custom_vjp"].default_example
    expect(page.get_by_test_id("example-select")).to_have_value(default)
    source = EXHIBITS["custom_vjp"].example_paths()[default].read_text()
    assert editor_text(page).strip() == source.strip()
    set_code(page, TYPED_SOURCE)
    page.get_by_test_id("exhibit-vmap").click()
    expect(page.get_by_test_id("example-select")).to_have_value("")
    assert editor_text(page).strip() == TYPED_SOURCE.strip()


def test_endless_loop_times_out_at_its_line(page: Page, console_errors: list[str]) -> None:
    """An endless Python loop in f hits the wall-clock limit; the error names the line the
    worker was on (from its stack dump) and the editor marks it; the next run works. On a server
    of its own with a 3 s limit (``serve --timeout 3``): the session's server would wait out its
    10 s (this test took ~17 s; the limit's own tests are backend/tests/test_sandbox_limits)."""
    loop = "def f(x):\n    n = 0\n    while True:\n        n += 1\n\nargs = (1.0,)\n"
    with serving("--timeout", "3", cwd=ROOT) as server:
        page.goto(server.url + "/")
        page.get_by_test_id("exhibit-tracing").click()
        expect(page.get_by_test_id("exhibit-title")).to_contain_text(EXHIBITS["tracing"].title)
        expect(page.get_by_test_id("editor").locator(".cm-line").nth(3)).to_be_attached()
        set_code(page, loop)
        page.get_by_test_id("run").click()
        expect(page.get_by_test_id("error-kind")).to_have_attribute(
            "data-kind", "timeout", timeout=RUN_TIMEOUT_MS
        )
        expect(page.get_by_test_id("error-message")).to_contain_text("wall-clock limit of 3 s")
        expect(page.get_by_test_id("error-line")).to_contain_text(re.compile(r"[34]"))
        error_line = page.get_by_test_id("editor").locator(".cm-line.cm-js-error-line")
        expect(error_line).to_have_count(1)
        expect(error_line).to_have_text(re.compile(r"while True:|n \+= 1"))
        set_code(page, TYPED_SOURCE)
        run_and_wait(page)
        expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert console_errors == []


def test_typed_call_arguments_fail_without_blaming_a_snippet_line(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """A "call with these args" expression that raises is the typed input's fault: the error
    panel says so and names no line of the snippet (before: f's def line)."""
    open_exhibit(page, "tracing")
    set_code(page, TYPED_SOURCE)
    run_and_wait(page)
    page.get_by_test_id("call-expr-input").fill("(1/0,)")
    page.get_by_test_id("call-expr").click()
    run_and_wait(page)
    panel = page.get_by_test_id("error-panel")
    expect(panel.get_by_test_id("error-class")).to_have_text("ZeroDivisionError")
    expect(panel.get_by_test_id("error-during")).to_have_text(
        "while evaluating the arguments you typed for call #1"
    )
    explanation = panel.get_by_test_id("error-explanation")
    expect(explanation).to_contain_text("the arguments you typed for call #1 ((1/0,))")
    expect(explanation.locator("code").first).to_have_text("(1/0,)")
    expect(explanation).to_contain_text("The expression comes from the call box, not from")
    expect(panel.get_by_test_id("error-line")).to_have_count(0)
    page.screenshot(path=str(screenshots / "tracing-typed-call-error.png"), full_page=True)
    assert console_errors == []


def test_a_view_that_fails_fails_alone(page: Page, console_errors: list[str]) -> None:
    """An exhibit view that throws on a stream it did not expect (here a ``jaxpr_staged`` whose
    jaxpr view lost its eqns on the way, rewritten by the test's websocket route) shows an error
    in its place; the shell, the stepper and the editor keep working, and the editor its text."""
    from playwright.sync_api import WebSocketRoute

    def corrupt(message: str | bytes) -> str | bytes:
        if isinstance(message, str) and '"type":"jaxpr_staged"' in message:
            events = frame_objects(message)  # one event, or an array of them
            for event in events:
                if event["type"] == "jaxpr_staged":
                    event["jaxpr"]["eqns"] = None
            return json.dumps(events)
        return message

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        server.on_message(lambda message: ws.send(corrupt(message)))
        ws.on_message(lambda message: server.send(message))

    page.route_web_socket(re.compile(r".*/api/ws.*"), route)
    open_exhibit(page, "tracing")
    code = (
        "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2.0\nargs = (jnp.ones(3),)\n"
    )
    set_code(page, code)
    run_and_wait(page)
    expect(page.get_by_test_id("view-failed")).to_be_visible()
    expect(page.get_by_test_id("view-failed")).to_contain_text("Tracing")
    assert editor_text(page).strip() == code.strip()
    # The shell still steps through the run.
    page.get_by_test_id("stepper-first").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_started")
    assert any("exhibit view failed" in e for e in console_errors), console_errors
