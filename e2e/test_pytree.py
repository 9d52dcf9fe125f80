"""The pytree exhibit in real Chromium: run the default example and check the tree, leaves and
treedef against ``jax.tree_util`` in this process; step through the visit; edit the container
in the editor, run, and see the leaves and treedef update; compare two containers and see the
first difference highlighted; C09 (f fails on the user's line, the flattening still shown).
Screenshots in light and dark themes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme, shoot_both_themes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "exhibits" / "pytree" / "examples"
CASES = Path(__file__).resolve().parents[1] / "cases"


def load(source: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(source, "<snippet>", "exec", dont_inherit=True), namespace)
    return namespace


def flattened(source: str) -> tuple[list[str], str]:
    """The ``keystr`` paths and treedef string of the snippet's ``args``, from JAX here."""
    args = tuple(load(source)["args"])
    with_path, treedef = jax.tree_util.tree_flatten_with_path(args)
    return [jax.tree_util.keystr(p) for p, _ in with_path], str(treedef)


def check_leaves(page: Page, source: str, testid: str = "pytree-args") -> None:
    keypaths, treedef = flattened(source)
    expect(page.get_by_test_id(f"{testid}-treedef")).to_have_text(treedef)
    rows = page.get_by_test_id(f"{testid}-leaves").locator("tbody tr")
    expect(rows).to_have_count(len(keypaths))
    for i, path in enumerate(keypaths):
        expect(rows.nth(i).locator("td").nth(1)).to_have_text(path)


def test_default_example_tree_leaves_and_treedef_equal_jaxs(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1200})
    open_exhibit(page, "pytree")
    set_theme(page, "light")
    page.get_by_test_id("example-select").select_option("nested_params")
    expect(page.get_by_test_id("editor")).to_contain_text("def f(")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("jaxpr-text")).to_be_visible()
    source = (EXAMPLES / "nested_params.py").read_text()
    check_leaves(page, source)
    args = tuple(load(source)["args"])
    treedef: Any = jax.tree_util.tree_structure(args)
    num_nodes = treedef.num_nodes
    nodes = page.get_by_test_id("pytree-tree-args").locator("li")
    expect(nodes).to_have_count(num_nodes)
    # Dict keys in sorted order, None a node with no children, dataclasses registered.
    expect(nodes.nth(2)).to_have_attribute("data-keypath", "[0]['frozen']")
    expect(nodes.nth(2)).to_have_attribute("data-registration", "None")
    expect(page.locator("[data-registration=register_dataclass]")).to_have_count(2)
    expect(page.locator("[data-registration=namedtuple]")).to_have_count(1)
    expect(page.get_by_test_id("pytree-agree")).to_contain_text("agree")

    # The visit as a stepper: the shell's cursor back to an early event makes that node current.
    page.get_by_test_id("stepper-first").click()
    for _ in range(4):
        page.get_by_test_id("stepper-next").click()
    current = page.locator("li[data-state=current]")
    expect(current).to_have_count(1)
    index = int((current.get_attribute("data-testid") or "").rsplit("-", 1)[1])
    expect(page.locator("li[data-state=pending]")).to_have_count(num_nodes - index - 1)
    page.get_by_test_id("pytree-next").click()
    expect(page.get_by_test_id(f"pytree-node-args-{index + 1}")).to_have_attribute(
        "data-state", "current"
    )
    shoot_both_themes(page, screenshots, "pytree-default", full_page=True)


def test_editing_the_container_updates_leaves_and_treedef(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 1100})
    open_exhibit(page, "pytree")
    first = (
        "import jax.numpy as jnp\n\n\n"
        "def f(d):\n"
        "    return d['b'] * 2\n\n\n"
        "args = ({'b': jnp.ones(2), 'a': [1.0, None]},)\n"
    )
    set_code(page, first)
    run_and_wait(page)
    check_leaves(page, first)
    second = first.replace("[1.0, None]", "(1.0, {'z': 2.0, 'y': 3.0})")
    set_code(page, second)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    check_leaves(page, second)
    expect(page.get_by_test_id("pytree-args-leaves")).to_contain_text("[0]['a'][1]['y']")
    page.screenshot(path=str(screenshots / "pytree-edited.png"), full_page=True)


def test_compare_shows_the_first_difference(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1200})
    open_exhibit(page, "pytree")
    set_theme(page, "dark")
    page.get_by_test_id("example-select").select_option("compare_retrace")
    expect(page.get_by_test_id("editor")).to_contain_text("other =")
    run_and_wait(page)
    source = (EXAMPLES / "compare_retrace.py").read_text()
    ns = load(source)
    left: Any = jax.tree_util.tree_structure(tuple(ns["args"]))
    right: Any = jax.tree_util.tree_structure(ns["other"])
    assert left != right
    compare = page.get_by_test_id("pytree-compare")
    expect(compare).to_have_attribute("data-equal", "false")
    expect(compare).to_contain_text(str(left))
    expect(compare).to_contain_text(str(right))
    expect(page.get_by_test_id("pytree-diff-keypath")).to_have_text("[0]['hist']")
    expect(page.get_by_test_id("pytree-diff-kind")).to_have_text("type")
    expect(page.get_by_test_id("pytree-jax-error")).to_contain_text("tree_map tree[0]['hist']")
    # The differing node and its subtree are marked in both pictures.
    expect(page.get_by_test_id("pytree-tree-args").locator("li.diff")).to_have_count(3)
    expect(page.get_by_test_id("pytree-tree-other").locator("li.diff")).to_have_count(3)
    page.screenshot(path=str(screenshots / "pytree-compare-dark.png"), full_page=True)


def test_c09_error_on_the_users_line_with_the_flattening_shown(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 1100})
    open_exhibit(page, "pytree")
    source = (CASES / "C09_none_grads_broken.py").read_text()
    set_code(page, source)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_failed")
    expect(page.get_by_test_id("error-class")).to_have_text("TypeError")
    expect(page.get_by_test_id("error-message")).to_contain_text("'float' and 'NoneType'")
    expect(page.get_by_test_id("error-line")).to_contain_text("7")
    check_leaves(page, source)
    expect(page.get_by_test_id("pytree-failed")).to_contain_text("line 7")
    page.screenshot(path=str(screenshots / "pytree-c09.png"), full_page=True)


def test_registrations_example_names_every_kind(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1200})
    open_exhibit(page, "pytree")
    page.get_by_test_id("example-select").select_option("registrations")
    expect(page.get_by_test_id("editor")).to_contain_text("register_static")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    check_leaves(page, (EXAMPLES / "registrations.py").read_text())
    tree = page.get_by_test_id("pytree-tree-args")
    for kind in (
        "register_pytree_node",
        "register_pytree_with_keys",
        "register_pytree_node_class",
        "register_pytree_with_keys_class",
        "register_dataclass",
        "register_static",
    ):
        expect(tree.locator(f"[data-registration={kind}]")).to_have_count(1)
    expect(tree.locator("[data-keypath='[1]']")).to_have_attribute("data-registration", "leaf")
    page.screenshot(path=str(screenshots / "pytree-registrations.png"), full_page=True)
