"""The pytree exhibit on a container larger than it draws (break-it review s11): the page says
how many nodes the tree picture and how many leaves the table leave out, and that values are
shown for the first leaves only; the counts are JAX's (``tree_flatten_with_path`` here)."""

from __future__ import annotations

from pathlib import Path

import jax
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code
from exhibits.pytree import probe

N = probe.MAX_LEAVES + 500
SOURCE = f"def f(x):\n    return x\n\n\nargs = ([float(i) for i in range({N})],)\n"


def test_a_large_container_says_what_is_left_out(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    args = ([float(i) for i in range(N)],)
    nodes: int = jax.tree_util.tree_structure(args).num_nodes  # type: ignore[attr-defined]
    page.set_viewport_size({"width": 1500, "height": 1200})
    open_exhibit(page, "pytree")
    set_code(page, SOURCE)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    drawn = probe.MAX_VISITS
    expect(page.get_by_test_id("pytree-tree-args-omitted")).to_have_text(
        f"The first {drawn} of {nodes} nodes are drawn; {nodes - drawn} more are not."
    )
    expect(page.get_by_test_id("pytree-tree-args").locator("li")).to_have_count(drawn)
    omitted = page.get_by_test_id("pytree-args-omitted")
    expect(omitted).to_contain_text(
        f"The table lists the first {probe.MAX_LEAVES} leaves; {N - probe.MAX_LEAVES} more are"
        " not listed."
    )
    expect(omitted).to_contain_text(f"Values are shown for the first {probe.MAX_PREVIEWS}")
    expect(page.get_by_test_id("pytree-args-leaves").locator("tbody tr")).to_have_count(
        probe.MAX_LEAVES
    )
    page.get_by_test_id("pytree-tree-args-omitted").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "pytree-cut.png"))
    assert console_errors == []
