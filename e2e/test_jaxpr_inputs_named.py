"""The jaxpr text names its inputs by keypath (issue 31, item 2): the tracing exhibit's default
example, ``mlp_loss(params, x, y)`` with a dict of parameters. Each input row holds JAX's binder
and the keypath of its leaf (``jax.tree_util``'s, computed here); unchecking the toggle gives
JAX's text byte for byte."""

from __future__ import annotations

import inspect

import jax
from jaxscope.sandbox.snippet import load_snippet
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait
from exhibits.registry import EXHIBITS

EXAMPLE = EXHIBITS["tracing"].example_paths()["mlp_loss"]


def test_the_jaxpr_text_names_its_inputs(page: Page, console_errors: list[str]) -> None:
    snippet = load_snippet(EXAMPLE.read_text())
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    # f's parameter name, then the leaf's keypath in that argument (params['w1'])
    names = list(inspect.signature(snippet.f).parameters)
    keypaths = [
        f"{names[i]}{jax.tree_util.keystr(path)}"
        for i, arg in enumerate(snippet.args)
        for path, _ in jax.tree_util.tree_flatten_with_path(arg)[0]
    ]
    assert any("[" in k for k in keypaths)
    # JAX's binders of the inputs, as its text prints them: `{ lambda ; a:f32[16] b:... . let`
    header = str(closed).split(". let", 1)[0].split(";", 1)[1]
    binders = header.split()
    assert len(binders) == len(keypaths) == len(closed.jaxpr.invars)
    open_exhibit(page, "tracing")
    page.get_by_test_id("example-select").select_option("mlp_loss")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    fold = page.get_by_test_id("jaxpr-fold")
    expect(fold).to_be_checked()
    for i, binder in enumerate(binders):
        row = page.get_by_test_id(f"jaxpr-text-invar-{i}")
        expect(row).to_contain_text(binder)
        expect(row.locator(".keypath")).to_have_text(keypaths[i])
    fold.uncheck()
    assert page.get_by_test_id("jaxpr-text").inner_text().strip() == str(closed).strip()
    assert console_errors == []
