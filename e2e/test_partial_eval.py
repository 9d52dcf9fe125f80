"""The partial_eval exhibit in real Chromium: the split of a small function against JAX computed
in this test process, toggling an input known and watching the split change, picking a residual
(its producer and consumers highlighted, its line selected), and sorting the remat table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.interpreters import partial_eval as pe
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

SOURCE = """import jax.numpy as jnp
import numpy as np


def f(x):
    y = jnp.sin(x) * x
    return jnp.sum(y ** 2)


args = (np.array([0.0, 1.0, 2.0], np.float32),)
"""
X = np.array([0.0, 1.0, 2.0], np.float32)
REMAT_LAYERS = (
    Path(__file__).resolve().parents[1]
    / "exhibits"
    / "partial_eval"
    / "examples"
    / "remat_layers.py"
)


def f(x: jax.Array) -> jax.Array:
    return jnp.sum((jnp.sin(x) * x) ** 2)


def split(known: list[bool]) -> tuple[str, str, int]:
    jvp = jax.make_jaxpr(lambda p, t: jax.jvp(f, p, t))((X,), (X,))
    k, u, _, res = pe.partial_eval_jaxpr_nounits(jvp, [not b for b in known], instantiate=False)
    return str(k), str(u), len(res)


def mlp_split() -> tuple[Any, Any, Any]:
    """The default example's JVP jaxpr and its split, computed here with JAX."""
    ns: dict[str, Any] = {"__name__": "snippet"}
    path = Path(__file__).resolve().parents[1] / "exhibits" / "tracing" / "examples" / "mlp_loss.py"
    exec(compile(path.read_text(), "<snippet>", "exec"), ns)
    args = ns["args"]
    tangents = jax.tree.map(
        lambda x: (
            np.zeros(np.shape(x), jax.dtypes.float0)
            if np.issubdtype(np.asarray(x).dtype, np.integer)
            else np.zeros_like(x)
        ),
        args,
    )
    jvp = jax.make_jaxpr(lambda p, t: jax.jvp(ns["f"], p, t))(args, tangents)
    n = len(jvp.jaxpr.invars) // 2
    k, u, _, _ = pe.partial_eval_jaxpr_nounits(jvp, [False] * n + [True] * n, instantiate=False)
    return jvp, k, u


def text_of(page: Page, testid: str) -> str:
    return page.get_by_test_id(testid).inner_text().rstrip("\n")


def test_toggle_known_and_watch_the_split_change(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "partial_eval")
    set_theme(page, "light")
    set_code(page, SOURCE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    known_text, unknown_text, n_res = split([True, False])
    assert text_of(page, "jaxpr-text") == known_text
    assert text_of(page, "unknown-jaxpr-text") == unknown_text
    expect(page.get_by_test_id("residual-count")).to_have_text(str(n_res))

    # pick the residual produced by sin: its eqn is highlighted in the known jaxpr, its readers
    # in the unknown one, and its line is selected in the editor
    row = page.get_by_test_id("residual-table").locator("tr", has_text="output of sin")
    row.click()
    expect(page.locator('[data-testid^="known-eqn-"][aria-pressed="true"]')).to_have_count(1)
    expect(page.locator('[data-testid^="known-eqn-"][aria-pressed="true"]')).to_contain_text("sin")
    assert page.locator('[data-testid^="unknown-eqn-"][aria-pressed="true"]').count() >= 1
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_count(1)
    expect(selected).to_have_text("    y = jnp.sin(x) * x")
    shoot_both_themes(page, screenshots, "partial_eval-split", full_page=True)

    # the tangent becomes known: everything is known, no residuals, an empty linear jaxpr
    page.get_by_test_id("known-toggle-1").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        re.compile(r"run_finished|run_failed"), timeout=30_000
    )
    expect(page.get_by_test_id("known-toggle-1")).to_have_text("known")
    known_text, unknown_text, n_res = split([True, True])
    expect(page.get_by_test_id("no-residuals")).to_be_visible()
    assert text_of(page, "jaxpr-text") == known_text
    assert text_of(page, "unknown-jaxpr-text") == unknown_text
    assert n_res == 0

    # the primal unknown too: everything moves to the unknown side
    page.get_by_test_id("known-reset").click()
    expect(page.get_by_test_id("residual-count")).to_have_text("4", timeout=30_000)
    page.get_by_test_id("known-toggle-0").click()
    expect(page.get_by_test_id("known-toggle-0")).to_have_text("unknown", timeout=30_000)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        re.compile(r"run_finished"), timeout=30_000
    )
    known_text, unknown_text, _ = split([False, False])
    assert text_of(page, "unknown-jaxpr-text") == unknown_text
    assert console_errors == []


def test_sort_the_remat_table(page: Page, console_errors: list[str], screenshots: Path) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "partial_eval")
    page.get_by_test_id("example-select").select_option("remat_layers")
    expect(page.get_by_test_id("editor")).to_contain_text("checkpoint_name")
    # what jax.vjp keeps under nothing_saveable: as many arrays as remat_layers has inputs
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(REMAT_LAYERS.read_text(), "<snippet>", "exec"), ns)
    nothing_fn = jax.checkpoint(ns["f"], policy=jax.checkpoint_policies.nothing_saveable)
    pullback = jax.eval_shape(lambda *a: jax.vjp(nothing_fn, *a)[1], *ns["args"])
    n_inputs = len(jax.tree.leaves(pullback))
    assert n_inputs == len(jax.tree.leaves(ns["args"]))
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    table = page.get_by_test_id("remat-table")
    expect(table.locator('[data-testid^="remat-row-"]')).to_have_count(8)

    def saved_counts() -> list[int]:
        return [int(t) for t in table.get_by_test_id("remat-saved").all_inner_texts()]

    def policies() -> list[str]:
        return table.get_by_test_id("remat-policy").all_inner_texts()

    assert policies()[0] == "no checkpoint"
    page.get_by_test_id("remat-sort-saved").click()
    counts = saved_counts()
    assert counts == sorted(counts)
    page.get_by_test_id("remat-sort-saved").click()
    counts = saved_counts()
    assert counts == sorted(counts, reverse=True)
    assert policies()[0] in ("no checkpoint", "everything_saveable")
    page.get_by_test_id("remat-sort-policy").click()
    assert policies() == sorted(policies())
    expect(page.get_by_test_id("remat-note")).to_contain_text("measured on the worker's CPU")

    # nothing_saveable saves no computed value, only the primal inputs (one per array of args)
    nothing = table.locator('[data-testid^="remat-row-"]', has_text="nothing_saveable")
    expect(nothing.get_by_test_id("remat-saved")).to_have_text("0")
    expect(nothing.get_by_test_id("remat-saved-inputs")).to_have_text(f"+ {n_inputs} inputs")

    # open a row: the saved residuals with their lines
    table.locator('[data-testid^="remat-row-"]', has_text="save_only_these_names").click()
    expect(table.locator('[data-testid^="remat-saved-list-"]')).to_contain_text("named 'act'")
    page.screenshot(path=str(screenshots / "partial_eval-remat.png"), full_page=True)
    assert console_errors == []


def test_default_example_steps_from_split_to_rows(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The default example (mlp_loss): the split arrives in one step, then a remat row a step."""
    page.set_viewport_size({"width": 1500, "height": 1100})
    answered = replay_runs(page, "partial_eval", "mlp_loss")
    open_exhibit(page, "partial_eval")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert len(answered) == 1, answered
    rows = page.get_by_test_id("remat-table").locator('[data-testid^="remat-row-"]')
    expect(rows).to_have_count(5)
    expect(page.get_by_test_id("out-unknowns")).to_have_text("[False, True]")
    page.screenshot(path=str(screenshots / "partial_eval-default.png"), full_page=True)

    # the headline adds up: the eqn counts of JAX's split, here in this process
    jvp, k, u = mlp_split()
    split_names = [
        e.params["name"]
        for e in k.jaxpr.eqns
        if e.primitive.name == "jit"
        and any(e.params["name"] == x.params.get("name") for x in u.jaxpr.eqns)
    ]
    assert split_names == ["log_softmax", "take_along_axis"]
    n_k, n_u, n_j = len(k.jaxpr.eqns), len(u.jaxpr.eqns), len(jvp.jaxpr.eqns)
    assert n_k + n_u == n_j + len(split_names)
    expect(page.get_by_test_id("split-sentence")).to_contain_text(
        f"{n_k} of the JVP's {n_j} eqns run in the known jaxpr, {n_u} in the unknown one"
    )
    expect(page.get_by_test_id("split-sentence")).to_contain_text(
        f"{n_k} + {n_u} = {n_k + n_u}, not {n_j}: "
        "2 jit eqns (log_softmax, take_along_axis) are split"
    )

    # the int input's float0 tangent: no toggle, a tooltip says why
    flag = page.get_by_test_id("known-toggle-11")  # tangent args[2]
    expect(flag).to_be_disabled()
    expect(flag).to_have_attribute(
        "title", re.compile(r"tangent args\[2\]: A float0 tangent .* symbolic zero")
    )
    expect(page.get_by_test_id("float0-note-11")).to_have_text("symbolic zero")
    for i in range(11):
        expect(page.get_by_test_id(f"known-toggle-{i}")).to_be_enabled()

    # at 1500 px the two jaxprs are stacked, full width: no line of either is cut
    known_box = page.get_by_test_id("known-pane").bounding_box()
    unknown_box = page.get_by_test_id("unknown-pane").bounding_box()
    assert known_box is not None and unknown_box is not None
    assert unknown_box["y"] >= known_box["y"] + known_box["height"] - 1
    for testid in ("jaxpr-text", "unknown-jaxpr-text"):
        overflow = page.get_by_test_id(testid).evaluate(
            "el => [...el.querySelectorAll('*'), el].some(x => x.scrollWidth > x.clientWidth + 1)"
        )
        assert not overflow, f"{testid} has lines cut at 1500 px"
    page.get_by_test_id("known-pane").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "partial_eval-stacked.png"))
    # step back to the split: no row yet, the view says rows are ahead
    page.get_by_test_id("stepper-first").click()
    for _ in range(10):
        if page.get_by_test_id("stepper-event-type").inner_text() == "jaxpr_split":
            break
        page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("jaxpr_split")
    expect(page.get_by_test_id("residual-count")).to_be_visible()
    expect(page.get_by_test_id("remat-table")).to_have_count(0)
    expect(page.get_by_text("measured rows ahead")).to_be_visible()
    for _ in range(2):
        page.get_by_test_id("stepper-next").click()  # stage_started(compile), then a row
        if page.get_by_test_id("stepper-event-type").inner_text() == "remat_policy_measured":
            break
    expect(rows).to_have_count(1)
    page.get_by_test_id("stepper-next").click()
    expect(rows).to_have_count(2)
    assert console_errors == []


WHILE_LOOP = Path(__file__).resolve().parents[1] / "exhibits" / "partial_eval" / "fixtures"
WHILE_LOOP_SOURCE = (WHILE_LOOP / "while_loop_bound.py").read_text()


def test_remat_unavailable_keeps_the_split_and_shows_jaxs_error(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "partial_eval")
    set_theme(page, "light")
    set_code(page, WHILE_LOOP_SOURCE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    ns: dict[str, Any] = {}
    exec(WHILE_LOOP_SOURCE, ns)
    with pytest.raises(ValueError) as info:
        jax.grad(ns["f"])(*ns["args"])
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    box = page.get_by_test_id("remat-unavailable")
    expect(box).to_be_visible()
    expect(page.get_by_test_id("remat-unavailable-message")).to_have_text(
        f"ValueError: {info.value}"
    )
    expect(page.get_by_test_id("remat-unavailable-why")).to_contain_text("while_loop")
    expect(page.get_by_test_id("remat-table")).to_have_count(0)
    box.scroll_into_view_if_needed()
    in_both_themes(
        page,
        lambda theme: page.screenshot(
            path=str(screenshots / f"partial_eval_remat_unavailable_{theme}.png")
        ),
    )
    assert console_errors == []


GPT_STACK = Path(__file__).resolve().parents[1] / "examples" / "real" / "gpt_stack.py"


def test_gpt_stack_remat_table_shows_residuals_and_says_what_it_did_not_measure(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """examples/real/gpt_stack.py (2,448 JVP eqns): too large to compile the gradient once per
    policy, so every row has its saved residuals (JAX's vjp, computed here) and the compiled
    columns say "not measured", with the reason above the table."""
    page.set_viewport_size({"width": 1500, "height": 1100})
    open_exhibit(page, "partial_eval")
    source = GPT_STACK.read_text()
    set_code(page, source)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        re.compile(r"run_finished|run_failed"), timeout=90_000
    )
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    ns: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(source, "<snippet>", "exec"), ns)
    policies = [None, *(getattr(jax.checkpoint_policies, n) for n in POLICIES)]
    want = []
    for policy in policies:
        fn = ns["f"] if policy is None else jax.checkpoint(ns["f"], policy=policy)
        pullback = jax.eval_shape(lambda *a, fn=fn: jax.vjp(fn, *a)[1], *ns["args"])
        want.append(len(jax.tree.leaves(pullback)))
    table = page.get_by_test_id("remat-table")
    expect(table.locator('[data-testid^="remat-row-"]')).to_have_count(len(want))
    # the cell: the computed residuals, then "+ N inputs" (design 0084); together the pullback's
    assert [
        int(row.get_by_test_id("remat-saved").inner_text())
        + sum(
            int(n)
            for text in row.get_by_test_id("remat-saved-inputs").all_inner_texts()
            for n in re.findall(r"\d+", text)
        )
        for row in table.locator('[data-testid^="remat-row-"]').all()
    ] == want
    for cell in ("remat-temp", "remat-ms", "remat-grad"):
        assert set(table.get_by_test_id(cell).all_inner_texts()) == {"not measured"}
    note = page.get_by_test_id("remat-not-measured")
    expect(note).to_contain_text("no row was compiled")
    # 2,448 top-level JVP eqns, 2,638 with those inside its calls (jnp helpers' jit eqns)
    expect(page.get_by_test_id("remat-not-measured-why")).to_contain_text(
        "the JVP jaxpr has 2,638 eqns (those inside its calls included), and the table "
        "compiles its rows only up to 500"
    )
    expect(page.get_by_test_id("remat-note")).to_contain_text("Residual bytes are exact")
    note.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "partial_eval_gpt_stack_remat.png"))
    assert console_errors == []


POLICIES = (
    "everything_saveable",
    "nothing_saveable",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
)
