"""Real programs in the page (issue 14): a 20,000-eqn loop does not hang the tab, and a 12-layer
GPT stack's jaxpr is windowed, named and linked. Real Chromium against a real `jaxscope serve`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jax
import pytest
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.server.frames import frame_objects
from playwright.sync_api import Locator, Page, expect

from e2e.browser import editor_text, open_exhibit, run_real, set_code
from e2e.real_loop import real_loop

# One test process runs every real-program test, one after another (docs/design/0049-test-time.md).
pytestmark = pytest.mark.xdist_group("real_programs")

ROOT = Path(__file__).resolve().parent.parent
LOOP = (ROOT / "examples" / "real" / "loop_20k.py").read_text()
GPT = (ROOT / "examples" / "real" / "gpt_stack.py").read_text()

# The page holds what is on screen, not the program: far fewer elements than 20,000 rows.
MAX_DOM_ELEMENTS = 5_000


def dom_elements(page: Page) -> int:
    return int(page.evaluate("document.getElementsByTagName('*').length"))


def test_cancel_answers_while_a_20000_eqn_loop_streams(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    open_exhibit(page, "tracing")
    set_code(page, LOOP)
    page.get_by_test_id("run").click()
    # The stream is under way: thousands of eqn_recorded events are arriving.
    expect(page.get_by_test_id("eqn-count")).to_have_text(
        re.compile(r"^[1-9]\d{3,}"), timeout=60_000
    )
    page.get_by_test_id("cancel").click()
    expect(page.get_by_test_id("error-kind")).to_have_attribute(
        "data-kind", "cancelled", timeout=10_000
    )
    assert dom_elements(page) < MAX_DOM_ELEMENTS
    page.screenshot(path=str(screenshots / "real-loop-cancelled.png"))
    assert console_errors == []


def test_the_gpt_stack_jaxpr_is_windowed_named_and_linked(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    run_real(page, "tracing", GPT, timeout=120_000)
    snippet = load_snippet(GPT)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    eqns = len(closed.jaxpr.eqns)
    expect(page.get_by_test_id("eqn-count")).to_have_text(str(eqns))
    # Windowed: the eqn stream and the jaxpr text hold only the rows in view.
    assert page.get_by_test_id("eqn-stream").get_attribute("data-windowed") == "true"
    assert page.locator("[data-testid^='recorded-eqn-']").count() < 200
    assert dom_elements(page) < MAX_DOM_ELEMENTS
    # Names: the structure tab names each invar by its keypath in the arguments, as JAX does.
    page.get_by_test_id("tab-structure").click()
    names = closed.jaxpr.debug_info.arg_names
    expect(page.get_by_test_id("invar-keypath-0")).to_have_text(names[0])
    # Linking: selecting the last eqn scrolls the windowed jaxpr text to it and selects it.
    page.get_by_test_id("tab-text").click()
    last = eqns - 1
    page.get_by_test_id("eqn-stream").evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.get_by_test_id(f"recorded-eqn-{last}").click()
    expect(page.get_by_test_id(f"eqn-{last}")).to_have_attribute("aria-pressed", "true")
    page.screenshot(path=str(screenshots / "real-gpt-tracing.png"), full_page=False)
    assert console_errors == []


def open_gpt_graph(page: Page) -> None:
    """Trace the GPT stack in the tracing exhibit and open its dataflow graph tab."""
    open_exhibit(page, "tracing")
    set_code(page, GPT)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=120_000)
    page.get_by_test_id("tab-graph").click()


def _scroll_graph_until(page: Page, locator: Locator, step: int = 300) -> None:
    """Scroll the graph's box down from the top until ``locator`` is in the DOM (the graph
    holds only what is in view). A pass that reaches the end without it is tried again, slower:
    under load the page draws a scrolled view (and lays out the graph's last rows) late."""
    box = page.get_by_test_id("dataflow-graph")
    for wait_ms in (30, 200, 600):
        box.evaluate("el => { el.scrollTop = 0; }")
        for _ in range(400):
            page.wait_for_timeout(wait_ms)
            if locator.count() > 0:
                return
            at_end = box.evaluate(
                f"el => {{ const end = el.scrollTop + el.clientHeight >= el.scrollHeight - 1;"
                f" el.scrollTop += {step}; return end; }}"
            )
            if at_end:
                break
    expect(locator.first).to_be_attached()


def _seen_scrolling(page: Page, locator: Locator, attribute: str) -> set[str]:
    """The ``attribute`` of every element ``locator`` finds while the graph's box scrolls from
    its top to its bottom (the graph holds only what is in view)."""
    box = page.get_by_test_id("dataflow-graph")
    box.evaluate("el => { el.scrollTop = 0; }")
    seen: set[str] = set()
    for _ in range(500):
        page.wait_for_timeout(30)
        seen |= {
            v
            for v in locator.evaluate_all(f"els => els.map(e => e.getAttribute('{attribute}'))")
            if v
        }
        if box.evaluate(
            "el => { const end = el.scrollTop + el.clientHeight >= el.scrollHeight - 1;"
            " el.scrollTop += el.clientHeight / 2; return end; }"
        ):
            break
    return seen


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_the_gpt_stack_graph_opens_on_its_layers_and_expands_one(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The dataflow graph of the 12-layer stack opens on its name scopes as collapsed groups, one
    per `jax.named_scope(f"layer{i}")` (not the first 150 of 928 eqns); expanding layer3 shows a
    box with its calls (attention, layer norms, mlp), expanding attention its eqns, and clicking
    one selects that eqn in the eqn stream and its source line in the editor. The layers and the
    eqns are JAX's own (`jax.make_jaxpr`, each eqn's `source_info`)."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    snippet = load_snippet(GPT)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    stacks = [str(e.source_info.name_stack) for e in closed.jaxpr.eqns]
    layers = sorted({s.split("/")[0] for s in stacks if s}, key=lambda s: int(s[5:]))
    assert layers == [f"layer{i}" for i in range(12)]
    layer3 = [i for i, s in enumerate(stacks) if s.split("/")[0] == "layer3"]
    open_gpt_graph(page)
    group = "[data-testid='graph-group'][data-group-label='{}']"
    expect(page.locator(group.format("layer0"))).to_be_visible(timeout=30_000)
    assert page.get_by_test_id("graph-omitted").count() == 0
    assert page.locator("[data-testid^='graph-eqn-']").count() < 100
    page.get_by_test_id("dataflow-graph").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "real-gpt-graph-collapsed.png"))
    # Every layer is a group: the last one too, further down.
    _scroll_graph_until(page, page.locator(group.format("layer11")))
    labels = page.locator("[data-testid='graph-group'][data-group-label^='layer']")
    seen = {labels.nth(i).get_attribute("data-group-label") for i in range(labels.count())}
    assert seen <= set(layers) and "layer11" in seen
    # Expand layer3: a box labelled layer3 around the calls of block's body.
    _scroll_graph_until(page, page.locator(group.format("layer3")))
    page.locator(group.format("layer3")).click()
    cluster = page.locator("[data-testid='graph-cluster'][data-group-label='layer3']")
    expect(cluster).to_be_visible(timeout=30_000)
    attention = page.locator("[data-testid='graph-group'][data-group-label^='attention (line']")
    expect(attention.first).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    page.get_by_test_id("dataflow-graph").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "real-gpt-graph-layer3.png"))
    attention.first.click()
    box = page.locator("[data-testid='graph-cluster'][data-group-label^='attention']")
    expect(box.first).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    eqn_nodes = page.locator("[data-testid^='graph-eqn-']")
    expect(eqn_nodes.first).to_be_visible(timeout=30_000)
    shown = [int((n.get_attribute("data-testid") or "").rsplit("-", 1)[1]) for n in eqn_nodes.all()]
    inside = [i for i in shown if i in layer3 and "attn" not in stacks[i]]
    assert inside, shown
    index = max(i for i in inside if closed.jaxpr.eqns[i].primitive.name == "dot_general")
    page.get_by_test_id(f"graph-eqn-{index}").click()
    expect(page.get_by_test_id(f"recorded-eqn-{index}")).to_have_attribute("aria-pressed", "true")
    line = _snippet_line(closed.jaxpr.eqns[index])
    assert line is not None
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_text(GPT.splitlines()[line - 1])
    page.screenshot(path=str(screenshots / "real-gpt-graph-expanded.png"))
    assert console_errors == []


_IN_VIEW_JS = """(el, sel) => {
  const r = el.getBoundingClientRect();
  return [...el.querySelectorAll(sel)].filter((n) => {
    const b = n.getBoundingClientRect();
    return b.bottom > r.top && b.top < r.bottom && b.right > r.left && b.left < r.right;
  }).map((n) => n.dataset.testid + (n.dataset.groupLabel ? `:${n.dataset.groupLabel}` : ''));
}"""


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_expand_all_of_the_gpt_stack_keeps_nodes_in_view(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """ "expand all" of the 12-layer stack makes a layout about 1,800 x 63,000 units, rows of
    148 parameters at the top and the eqns in one column below: the box must not stay at the
    top-left corner, on nothing but parameters (a break-it review found it blank).
    After it, eqn nodes are inside the box's viewport, the first eqns of layer0 (the group in view
    before) among them; an eqn picked before "collapse all" is then found in the group that holds
    it, in view; and the overview's view rectangle is where the box is."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    snippet = load_snippet(GPT)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    stacks = [str(e.source_info.name_stack) for e in closed.jaxpr.eqns]
    open_gpt_graph(page)
    box = page.get_by_test_id("dataflow-graph")
    expect(page.locator("[data-testid='graph-group'][data-group-label='layer0']")).to_be_visible(
        timeout=30_000
    )
    before = box.evaluate(_IN_VIEW_JS, "[data-testid='graph-group']")
    assert "graph-group:layer0" in before, before
    page.get_by_test_id("graph-expand-all").click()
    expect(page.locator("[data-testid='dataflow-graph'] svg")).to_have_attribute(
        "aria-label", f"dataflow graph of {len(stacks)} eqns"
    )
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    width, height = box.evaluate("el => [el.scrollWidth, el.scrollHeight]")
    # a column of 60,000 units; the 148 parameters in rows (design 0027), not one 16,000 wide
    assert width < 3_000 and height > 20_000
    page.wait_for_timeout(200)
    shown = box.evaluate(_IN_VIEW_JS, "[data-testid^='graph-eqn-']")
    assert len(shown) >= 3, (shown, box.evaluate("el => [el.scrollLeft, el.scrollTop]"))
    eqns = sorted(int(t.rsplit("-", 1)[1]) for t in shown)
    # the group in view before, layer0, is in view after: some of its eqns (JAX's name stacks)
    assert any(stacks[i].split("/")[0] == "layer0" for i in eqns), eqns
    box.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "real-gpt-graph-expand-all.png"))
    # The overview's rectangle is the box's scroll position, not the corner.
    left = float(
        page.get_by_test_id("graph-minimap-view").evaluate("el => parseFloat(el.style.left)")
    )
    assert left > 10, left
    # Pick an eqn of layer0, then collapse all: the group node that holds it is in view.
    picked = next(i for i in eqns if stacks[i].split("/")[0] == "layer0")
    page.get_by_test_id(f"graph-eqn-{picked}").click()
    expect(page.get_by_test_id(f"recorded-eqn-{picked}")).to_have_attribute("aria-pressed", "true")
    page.get_by_test_id("graph-collapse-all").click()
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    page.wait_for_timeout(200)
    groups = box.evaluate(_IN_VIEW_JS, "[data-testid='graph-group']")
    assert "graph-group:layer0" in groups, groups
    page.screenshot(path=str(screenshots / "real-gpt-graph-collapse-all.png"))
    assert console_errors == []


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_expanding_the_gpt_stacks_params_shows_named_leaves_in_rows(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """Expanding the `params` group (148 leaves) of the 12-layer stack's graph: the box holds the
    leaves in rows by layer, not one row 16,000 units wide (a review found the view blank but for
    that row, the overview a thin strip); leaf nodes are in view, each named by its keypath as
    `jax.tree_util` gives it (`params['layers'][0]['b_down']`, shown `layers[0].b_down`)."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    snippet = load_snippet(GPT)
    leaves, _ = jax.tree_util.tree_flatten_with_path(snippet.args[0])
    keypaths = [f"params{jax.tree_util.keystr(path)}" for path, _ in leaves]
    assert len(keypaths) == 148
    # every argument leaf as JAX names it (the params' 148, then `tokens`, also a leaf node)
    arg_names = list(jax.make_jaxpr(snippet.f)(*snippet.args).jaxpr.debug_info.arg_names)
    assert arg_names[:148] == keypaths
    open_gpt_graph(page)
    box = page.get_by_test_id("dataflow-graph")
    params = page.locator("[data-testid='graph-group'][data-group-label='params']")
    expect(params).to_be_visible(timeout=30_000)
    params.click()
    expect(page.locator("[data-testid='graph-cluster'][data-group-label^='params']")).to_be_visible(
        timeout=30_000
    )
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    page.wait_for_timeout(200)
    in_view = """(el) => {
      const r = el.getBoundingClientRect();
      return [...el.querySelectorAll("[data-testid='graph-leaf']")].filter((n) => {
        const b = n.getBoundingClientRect();
        return b.top >= r.top && b.bottom <= r.bottom && b.left >= r.left && b.right <= r.right;
      }).map((n) => [n.getAttribute('aria-label'), n.querySelector('text.label').textContent]);
    }"""
    shown = box.evaluate(in_view)
    assert len(shown) >= 6, (shown, box.evaluate("el => [el.scrollLeft, el.scrollTop]"))
    for aria, label in shown:
        name = aria.split(" (")[0]
        assert name in arg_names, aria
        short = name.removeprefix("params").replace("['", ".").replace("']", "").lstrip(".")
        assert label == short, (label, name)
    # rows, not one row: the layout is a few screens wide at most
    width = box.evaluate("el => el.scrollWidth")
    assert width < 3_000, width
    # the leaves drawn (those near the view) sit in several rows
    leaf_y = (
        "el => [...el.querySelectorAll(\"[data-testid='graph-leaf'] rect\")]"
        ".map((r) => +r.getAttribute('y'))"
    )
    rows = {round(y) for y in box.evaluate(leaf_y)}
    assert len(rows) >= 4, rows
    box.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "real-gpt-graph-params.png"))
    _right_edge_is_clear_of_the_overview(page, screenshots)
    assert console_errors == []


# The last leaf node of each row of leaves in the DOM (rows are centred, so their ends differ by
# their labels): their screen boxes, and their right edges in layout units.
_ROW_ENDS_JS = """(el) => {
  const ends = new Map();
  for (const n of el.querySelectorAll("[data-testid='graph-leaf']")) {
    const r = n.querySelector('rect');
    const right = +r.getAttribute('x') + +r.getAttribute('width');
    const y = Math.round(+r.getAttribute('y'));
    if (!ends.has(y) || ends.get(y).layoutRight < right) {
      const b = n.getBoundingClientRect();
      ends.set(y, {
        top: b.top, bottom: b.bottom, left: b.left, right: b.right, layoutRight: right });
    }
  }
  return [...ends.values()];
}"""

# The right-most column of the overview's canvas holding a node (alpha of a node's fill, not
# only the faint box behind it).
_CANVAS_RIGHT_JS = """(el) => {
  const c = el.querySelector('canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let right = -1;
  for (let y = 0; y < c.height; y++)
    for (let x = 0; x < c.width; x++)
      if (d[(y * c.width + x) * 4 + 3] >= 80) right = Math.max(right, x);
  return [right, c.width];
}"""


def _right_edge_is_clear_of_the_overview(page: Page, screenshots: Path) -> None:
    """The graph's box scrolled to its right end: the last node of each row is drawn in the
    overview, and in the box left of the overview (a review found the overview over them: the
    box ended with the layout, under the overview)."""
    box = page.get_by_test_id("dataflow-graph")
    minimap = page.get_by_test_id("graph-minimap")
    expect(minimap).to_be_visible()
    box.evaluate("el => { el.scrollLeft = el.scrollWidth; el.scrollTop = 0; }")
    page.wait_for_timeout(300)
    column = box.evaluate(_ROW_ENDS_JS)
    assert len(column) >= 4, column
    mm = minimap.bounding_box()
    frame = box.bounding_box()
    assert mm is not None and frame is not None
    # the rows' last nodes at the overview's height, all left of it
    beside = [n for n in column if n["bottom"] > mm["y"] and n["top"] < mm["y"] + mm["height"]]
    assert beside, (column, mm)
    for n in beside:
        assert n["right"] <= mm["x"], (n, mm)
    # and in the box, not cut by its edge
    assert max(n["right"] for n in column) <= frame["x"] + frame["width"], (column, frame)
    # the overview draws that column: its right-most node pixels are where the layout says
    view_box = page.locator("[data-testid='dataflow-graph'] svg").get_attribute("viewBox")
    assert view_box is not None
    layout_width = float(view_box.split()[2])
    right, width = minimap.evaluate(_CANVAS_RIGHT_JS)
    want = int(max(n["layoutRight"] for n in column) * width / layout_width)
    assert want - 1 <= right <= want + 1, (right, want, width)
    page.screenshot(path=str(screenshots / "real-gpt-graph-params-right.png"))
    minimap.screenshot(path=str(screenshots / "real-gpt-graph-params-minimap.png"))


LONG = """\
import jax.numpy as jnp

def f(x):
    for _ in range({n}):
        x = jnp.sin(x) + x
    return x

args = (jnp.ones(3),)
"""


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_a_graph_of_over_1000_visible_eqns_draws_what_is_in_view(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """An unrolled loop of 1,600 eqns, all expanded (`expand all`): the graph draws every eqn
    (none left out), the box shows nodes wherever it is scrolled (top, middle, bottom; never blank
    space), and the DOM holds only those in view."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    code = LONG.format(n=800)
    snippet = load_snippet(code)
    eqns = len(jax.make_jaxpr(snippet.f)(*snippet.args).jaxpr.eqns)
    assert eqns == 1600
    open_exhibit(page, "tracing")
    set_code(page, code)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=120_000)
    page.get_by_test_id("tab-graph").click()
    expect(page.get_by_test_id("graph-group").first).to_be_visible(timeout=30_000)
    page.get_by_test_id("graph-expand-all").click()
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    expect(page.locator("[data-testid='dataflow-graph'] svg")).to_have_attribute(
        "aria-label", f"dataflow graph of {eqns} eqns"
    )
    assert page.get_by_test_id("graph-omitted").count() == 0
    box = page.get_by_test_id("dataflow-graph")
    height = int(box.evaluate("el => el.scrollHeight"))
    assert height > eqns * 38  # every eqn is a node of the layout, one row each
    in_view_js = """el => {
      const r = el.getBoundingClientRect();
      return [...el.querySelectorAll("[data-testid^='graph-eqn-']")].filter((n) => {
        const b = n.getBoundingClientRect();
        return b.bottom > r.top && b.top < r.bottom && b.right > r.left && b.left < r.right;
      }).map((n) => Number(n.dataset.testid.split('-').pop()));
    }"""
    seen: list[list[int]] = []
    for where in ("0", "el.scrollHeight / 2", "el.scrollHeight"):
        box.evaluate(f"el => {{ el.scrollTop = {where}; }}")
        page.wait_for_timeout(100)
        visible = box.evaluate(in_view_js)
        assert len(visible) >= 3, (where, visible)
        seen.append(visible)
        assert page.locator("[data-testid^='graph-eqn-']").count() < 150
    # Top, middle and bottom show different eqns, in order: the first, some in between, the last.
    assert min(seen[0]) == 0 and max(seen[2]) == eqns - 1
    assert max(seen[0]) < min(seen[1]) and max(seen[1]) < min(seen[2])
    page.screenshot(path=str(screenshots / "real-graph-1600-eqns.png"))
    assert console_errors == []


def _inner_jaxprs(eqn: Any) -> list[tuple[str, Any]]:
    """The jaxprs in an eqn's params as (params key + position among that key's, Jaxpr), keys
    sorted: ``jaxpr0``, ``branches1``. ``ClosedJaxpr``/``Jaxpr`` told apart by public attributes."""
    out: list[tuple[str, Any]] = []
    for key in sorted(eqn.params):
        value = eqn.params[key]
        position = 0
        for v in value if isinstance(value, tuple) else (value,):
            inner = v.jaxpr if hasattr(v, "jaxpr") and hasattr(v, "consts") else v
            if hasattr(inner, "eqns") and hasattr(inner, "invars"):
                out.append((f"{key}{position}", inner))
                position += 1
    return out


def _paths_of(jaxpr: Any, primitive: str, prefix: str = "") -> list[str]:
    """The places (``0/jaxpr0/2/jaxpr0/0``) of the eqns of ``primitive``, at any depth, in order."""
    out: list[str] = []
    for j, eqn in enumerate(jaxpr.eqns):
        path = f"{prefix}{j}"
        if eqn.primitive.name == primitive:
            out.append(path)
        for key, inner in _inner_jaxprs(eqn):
            out += _paths_of(inner, primitive, f"{path}/{key}/")
    return out


def _snippet_line(eqn: Any) -> int | None:
    for frame in eqn.source_info.traceback.frames:
        if frame.file_name == SNIPPET_FILENAME:
            return int(frame.line_num)
    return None


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_the_gpt_stack_graph_expands_jit_calls_finds_eqns_and_has_an_overview(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """In the 12-layer stack's graph, a `jit` call expands in place into its inner eqns and its
    box collapses it again; the search finds eqns by primitive inside nested `jit` calls, by
    source line and inside the layers' call groups, opening what holds them and selecting each
    (the eqn stream follows); the overview moves the view where it is clicked. The expected
    eqns are JAX's own (`jax.make_jaxpr`, the jaxprs in each eqn's params)."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    snippet = load_snippet(GPT)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    eqns = closed.jaxpr.eqns
    open_gpt_graph(page)
    expect(page.get_by_test_id("graph-group").first).to_be_visible(timeout=30_000)

    # Expand `jit log_softmax` with its +: its inner eqns, then collapse it by its box's header.
    soft = next(i for i, e in enumerate(eqns) if e.params.get("name") == "log_softmax")
    inner_count = len(_inner_jaxprs(eqns[soft])[0][1].eqns)
    # The graph holds only what is in view: scroll down to the eqn first.
    plus = page.locator(f"[data-testid='graph-expand'][data-group='x:{soft}']")
    _scroll_graph_until(page, plus)
    plus.click()
    inner = page.locator(f"[data-testid='graph-inner-eqn'][data-path^='{soft}/jaxpr0/']")
    expect(inner.first).to_be_visible(timeout=30_000)
    assert _seen_scrolling(page, inner, "data-path") == {
        f"{soft}/jaxpr0/{j}" for j in range(inner_count)
    }
    expect(page.get_by_test_id(f"graph-eqn-{soft}")).to_have_count(0)
    page.screenshot(path=str(screenshots / "real-gpt-graph-jit-expanded.png"))
    page.locator("[data-testid='graph-cluster'][data-group-label^='jit log_softmax']").click()
    expect(page.get_by_test_id(f"graph-eqn-{soft}")).to_be_visible(timeout=30_000)
    expect(inner).to_have_count(0)

    search = page.get_by_test_id("graph-search")
    count = page.get_by_test_id("graph-search-count")
    hit_class = re.compile(r"\bhit\b")

    # By primitive, inside nested jit calls (`jit _take` holds `jit _where`, which holds select_n).
    selects = _paths_of(closed.jaxpr, "select_n")
    search.fill("select_n")
    search.press("Enter")
    expect(count).to_have_text(f"1 of {len(selects)}")
    first = page.locator(f"[data-testid='graph-inner-eqn'][data-path='{selects[0]}']")
    expect(first).to_be_visible(timeout=30_000)
    expect(first).to_have_class(hit_class)
    top = int(selects[0].split("/")[0])
    expect(page.get_by_test_id(f"recorded-eqn-{top}")).to_have_attribute("aria-pressed", "true")

    # By source line: the eqns of `logits = x @ params["tok_emb"].T`.
    lines = GPT.splitlines()
    line = next(n for n, text in enumerate(lines, 1) if text.strip().startswith("logits ="))
    at_line = [i for i, e in enumerate(eqns) if _snippet_line(e) == line]
    search.fill(f"line {line}")
    search.press("Enter")
    expect(count).to_have_text(f"1 of {len(at_line)}")
    node = page.get_by_test_id(f"graph-eqn-{at_line[0]}")
    expect(node).to_be_visible(timeout=30_000)
    expect(node).to_have_class(hit_class)
    pressed = ("aria-pressed", "true")
    expect(page.get_by_test_id(f"recorded-eqn-{at_line[0]}")).to_have_attribute(*pressed)

    # Inside the layers: the first rsqrt is in layer 0's first layer_norm, in two call groups.
    rsqrts = [i for i, e in enumerate(eqns) if e.primitive.name == "rsqrt"]
    search.fill("rsqrt")
    search.press("Enter")
    expect(count).to_have_text(f"1 of {len(rsqrts)}")
    node = page.get_by_test_id(f"graph-eqn-{rsqrts[0]}")
    expect(node).to_be_visible(timeout=60_000)
    expect(node).to_have_class(hit_class)
    expect(page.get_by_test_id(f"recorded-eqn-{rsqrts[0]}")).to_have_attribute(*pressed)
    # Enter again: the next hit.
    search.press("Enter")
    expect(count).to_have_text(f"2 of {len(rsqrts)}")
    expect(page.get_by_test_id(f"recorded-eqn-{rsqrts[1]}")).to_have_attribute(*pressed)
    expect(page.get_by_test_id(f"graph-eqn-{rsqrts[1]}")).to_have_class(hit_class, timeout=60_000)
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    page.screenshot(path=str(screenshots / "real-gpt-graph-search.png"))

    # The overview: a click near its bottom moves the view down the graph.
    minimap = page.get_by_test_id("graph-minimap")
    expect(minimap).to_be_visible()
    canvas = page.get_by_test_id("dataflow-graph")
    canvas.evaluate("el => { el.scrollTop = 0; }")
    box = minimap.bounding_box()
    assert box is not None
    minimap.click(position={"x": box["width"] / 2, "y": box["height"] - 2})
    assert int(canvas.evaluate("el => el.scrollTop")) > 0
    page.screenshot(path=str(screenshots / "real-gpt-graph-minimap.png"))
    assert console_errors == []


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_the_stepper_walks_the_gpt_stack_transpose_steps_with_values_on_demand(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The backward pass of the 12-layer stack streams its steps without their values (details
    on demand); the card of the step on screen gets its values once the run ended, and stepping
    back through the steps fetches each one's as it comes into view, the page keeping up."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    events: list[int] = []  # the events of each frame received
    page.on(
        "websocket",
        lambda ws: ws.on("framereceived", lambda data: events.append(len(frame_objects(data)))),
    )
    open_exhibit(page, "transpose")
    set_code(page, GPT)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=240_000)
    card = page.get_by_test_id("tw-card")
    cts = page.get_by_test_id("tw-cts-in")
    expect(cts).not_to_contain_text("loading", timeout=30_000)
    # The gradient check at the end of the stream is within reach of the cursor: its values came.
    expect(page.get_by_test_id("tw-gradient")).not_to_contain_text("loading", timeout=30_000)
    streamed = sum(events)
    page.get_by_test_id("stepper-first").click()
    steps_seen: set[str] = set()
    for _ in range(40):
        page.get_by_test_id("stepper-next").click()
    # 40 events in: the card shows a step of the walk, with its values fetched.
    expect(card).to_be_visible()
    expect(cts).not_to_contain_text("loading", timeout=30_000)
    for _ in range(5):
        page.get_by_test_id("stepper-next").click()
        steps_seen.add(card.get_attribute("data-step") or "")
        expect(cts).not_to_contain_text("loading", timeout=30_000)
    assert len(steps_seen) >= 4, steps_seen
    # Only what was on screen came back after the run: far fewer events than steps.
    step_count = int(
        page.get_by_test_id("tw-step-count").inner_text().split("/")[1].strip().replace(",", "")
    )
    assert sum(events) - streamed < step_count / 4, (sum(events) - streamed, step_count)
    assert dom_elements(page) < MAX_DOM_ELEMENTS
    page.screenshot(path=str(screenshots / "real-gpt-transpose-steps.png"))
    assert console_errors == []


# Scroll a windowed text to ``top`` and, two frames later (the list draws the rows of its new
# offset), give the numbers of the eqns drawn whose test id starts with ``prefix`` and the text's
# height (which grows as eqn ranges arrive).
_DRAWN_AT = """async (el, [prefix, top]) => {
    el.scrollTop = top;
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    const drawn = [...el.querySelectorAll(`[data-testid^="${prefix}"]`)]
        .map((e) => Number(e.dataset.testid.slice(prefix.length)))
        .filter(Number.isInteger);
    return [drawn, el.scrollHeight];
}"""


# Scroll the text so that the eqn with test id ``testid`` (drawn) sits 150 px below its top, and
# give its scroll offset once it stayed there for 10 frames; null if the eqn is no longer drawn.
# A step's eqn brought into view (VirtualList: TanStack's scrollToIndex) keeps being brought back
# to for up to 5 s (TanStack's reconcileScroll, while rows measured shift it), which takes back
# a scroll made in the meantime: scrolled again until it stays.
_EQN_TO_MIDDLE = """async (box, testid) => {
    const start = performance.now();
    let stable = 0;
    while (stable < 10 && performance.now() - start < 8000) {
        const eqn = box.querySelector(`[data-testid="${testid}"]`);
        if (eqn === null) return null;
        const off = eqn.getBoundingClientRect().top - box.getBoundingClientRect().top - 150;
        if (Math.abs(off) < 2) stable += 1;
        else {
            stable = 0;
            box.scrollTop += off;
        }
        await new Promise((done) => requestAnimationFrame(done));
    }
    return stable < 10 ? null : box.scrollTop;
}"""


def _eqn_to_middle(page: Page, box: Locator, prefix: str, index: int) -> tuple[Locator, float]:
    """Eqn ``index`` of a windowed jaxpr text, scrolled to 150 px below the text's top where it
    stays (:data:`_EQN_TO_MIDDLE`), and the text's scroll offset then: a reader's place."""
    for _ in range(5):
        eqn = _scroll_to_eqn(page, box, prefix, index)
        at = box.evaluate(_EQN_TO_MIDDLE, f"{prefix}{index}")
        if at is not None:
            return eqn, float(at)
    raise AssertionError(f"eqn {index} did not stay in the middle of the text")


# Two frames after now (a scroll the click caused has been drawn): the text's scroll offset and
# whether the eqn with test id ``testid`` is drawn inside the text's visible part.
_EQN_IN_VIEW = """async (box, testid) => {
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    const eqn = box.querySelector(`[data-testid="${testid}"]`);
    if (eqn === null) return [box.scrollTop, false];
    const b = box.getBoundingClientRect();
    const e = eqn.getBoundingClientRect();
    return [box.scrollTop, e.bottom > b.top && e.top < b.bottom];
}"""


def _scroll_to_eqn(page: Page, box: Locator, prefix: str, index: int) -> Locator:
    """Scroll a windowed jaxpr text until eqn ``index`` (test id ``prefix`` + index) is drawn and
    give it: halving the offsets between the eqns drawn below and above it (~7 steps over the
    loop's ~40,000 px, where paging down from the top took ~80 pages of 50 ms to eqn 2,000);
    where no eqn is drawn (a range still to come), paging down from the top as before."""
    eqn = page.get_by_test_id(f"{prefix}{index}")
    lo, hi = 0.0, float(box.evaluate("el => el.scrollHeight"))
    for _ in range(100):
        if eqn.count() > 0:
            break
        mid = (lo + hi) / 2
        drawn, height = box.evaluate(_DRAWN_AT, [prefix, mid])
        if not drawn:
            break
        if index < min(drawn):
            hi = mid
        elif index > max(drawn):
            lo, hi = mid, max(hi, float(height))
    if eqn.count() == 0:
        box.evaluate("el => { el.scrollTop = 0; }")
        for _ in range(400):
            if eqn.count() > 0:
                break
            box.evaluate("el => { el.scrollTop += el.clientHeight; }")
            page.wait_for_timeout(50)
    eqn.scroll_into_view_if_needed()
    return eqn


def test_the_jvp_and_vmap_steps_of_a_4000_eqn_loop_say_where_they_stop(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The step-by-step capture stops at MAX_STEPS eqns: the badge and a note say how many of
    the program's eqns have a step, and an eqn past them, clicked, says it has none, is marked
    and stays where the reader clicked it (the text went back to its top). The loop at 1,000
    iterations (4,001 eqns) is past the cap at a fifth of the 20k loop's cost."""
    from jaxscope.internals import batching_steps, jvp_steps

    loop = real_loop(1_000)
    snippet = load_snippet(loop)
    total = len(jax.make_jaxpr(snippet.f)(*snippet.args).jaxpr.eqns)
    page.set_viewport_size({"width": 1400, "height": 1000})
    for exhibit, cap, prefix in (
        ("jvp", jvp_steps.MAX_STEPS, "primal-eqn-"),
        ("vmap", batching_steps.MAX_STEPS, "example-eqn-"),
    ):
        assert total > cap
        open_exhibit(page, exhibit)
        set_code(page, loop)
        page.get_by_test_id("run").click()
        expect(page.get_by_test_id("stepper-event-type")).to_have_text(
            "run_finished", timeout=240_000
        )
        expect(page.get_by_test_id(f"{exhibit}-step-count")).to_contain_text(
            f"step {cap:,} / {cap:,} of {total:,} eqns"
        )
        expect(page.get_by_test_id(f"{exhibit}-step-cap")).to_have_text(
            f"Steps for the first {cap:,} of {total:,} eqns: the step-by-step view stops at "
            f"{cap:,} (the jaxprs are whole)."
        )
        past = cap + 31
        box = page.get_by_test_id("jaxpr-text")
        eqn, at = _eqn_to_middle(page, box, prefix, past)
        eqn.click()
        expect(page.get_by_test_id(f"{exhibit}-no-step")).to_have_text(
            f"Eqn {past:,} has no step: the step-by-step view stops after the first {cap:,} of "
            f"{total:,} eqns (the jaxprs are whole)."
        )
        # the text stays at the eqn clicked (it went back to its top: the click cleared the
        # step's highlight, which JaxprText took for the stepper's ⏮), and marks it
        top, shown = box.evaluate(_EQN_IN_VIEW, f"{prefix}{past}")
        assert abs(top - at) < 20 and shown, (exhibit, at, top, shown)
        expect(eqn).to_have_attribute("aria-pressed", "true")
        expect(box.locator('[aria-pressed="true"]')).to_have_count(1)
        page.screenshot(path=str(screenshots / f"real-loop-{exhibit}-step-cap.png"))
        # an eqn before the cap has its step
        before = _scroll_to_eqn(page, page.get_by_test_id("jaxpr-text"), prefix, cap - 1)
        before.click()
        expect(page.get_by_test_id(f"{exhibit}-no-step")).to_have_count(0)
        expect(before).to_have_attribute("aria-pressed", "true")
        # the stepper's ⏮ (the highlight cleared, not by a click in the text) still goes to the top
        page.get_by_test_id("stepper-first").click()
        expect(box.locator('[aria-pressed="true"]')).to_have_count(0)
        assert box.evaluate(_EQN_IN_VIEW, f"{prefix}{cap - 1}")[0] == 0, exhibit
    assert console_errors == []


def test_partial_eval_of_a_4000_eqn_loop_counts_the_whole_jaxprs(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The split's jaxprs arrive in eqn ranges (their first eqns): the sentence and the badges
    give JAX's counts of the whole jaxprs (pe.partial_eval_jaxpr_nounits, here). The loop at
    1,000 iterations (the 20k loop took 290 s here beside a second test process)."""
    import numpy as np
    from jax._src.interpreters import partial_eval as pe

    loop = real_loop(1_000)
    snippet = load_snippet(loop)
    tangents = tuple(np.zeros_like(a) for a in snippet.args)
    jvp = jax.make_jaxpr(lambda p, t: jax.jvp(snippet.f, p, t))(tuple(snippet.args), tangents)
    n = len(jvp.jaxpr.invars) // 2
    k, u, _, _ = pe.partial_eval_jaxpr_nounits(jvp, [False] * n + [True] * n, instantiate=False)
    nk, nu, nj = len(k.jaxpr.eqns), len(u.jaxpr.eqns), len(jvp.jaxpr.eqns)
    page.set_viewport_size({"width": 1400, "height": 1000})
    open_exhibit(page, "partial_eval")
    set_code(page, loop)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("split-sentence")).to_contain_text(
        f"{nk:,} of the JVP's {nj:,} eqns run in the known jaxpr, {nu:,} in the unknown one",
        timeout=240_000,
    )
    expect(page.get_by_test_id("known-pane").locator(".ui-count")).to_have_text(f"{nk:,} eqns")
    expect(page.get_by_test_id("unknown-pane").locator(".ui-count")).to_have_text(f"{nu:,} eqns")
    page.screenshot(path=str(screenshots / "real-loop-partial_eval-counts.png"))
    # The residuals come in list ranges (design 0045): the table fills once they arrived, its
    # last row the unknown jaxpr's last residual invar (residuals first, then the n tangents).
    n_res = len(u.jaxpr.invars) - n
    assert n_res > 900
    table = page.get_by_test_id("residual-table")
    expect(table).to_be_visible(timeout=120_000)
    last = page.get_by_test_id(f"residual-{n_res - 1}")
    for _ in range(50):
        table.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        if last.count():
            break
        page.wait_for_timeout(200)
    expect(last).to_contain_text(u.jaxpr.invars[n_res - 1].aval.str_short(short_dtypes=True))
    expect(page.get_by_test_id(f"residual-{n_res}")).to_have_count(0)
    page.screenshot(path=str(screenshots / "real-loop-partial_eval-residuals.png"))
    # "load all" on the known pane's note: every eqn range arrives, and the view is whole (its
    # note goes: total_eqns is null once the last range is in). A jump to the end of the text
    # showed only its 5,000 outvars and loaded nothing (a new-user review).
    known_pane = page.get_by_test_id("known-pane")
    known_pane.get_by_test_id("jaxpr-text-load-all").click()
    expect(known_pane.get_by_test_id("jaxpr-summary-note")).to_have_count(0, timeout=180_000)
    expect(known_pane.locator(".ui-count")).to_have_text(f"{nk:,} eqns")
    assert console_errors == []


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_a_jitted_gpt_stacks_cut_texts_say_what_is_still_to_come(
    page: Page, console_errors: list[str]
) -> None:
    """``f = jax.jit(f)`` in partial_eval: the known, unknown and JVP jaxprs' texts are cut at
    16 KiB (nested ranges, design 0045, asked for once the run ended). While they are cut, a
    note above each text says how many characters are still to come, as the wire's ranges of
    that text count them; once the ranges are merged the notes go and the texts are whole."""
    code = GPT + "\n\nf = jax.jit(f)\n"
    split: list[dict[str, Any]] = []  # the jaxpr_split event, as sent
    # every text each pending note had, seen as the DOM changes (a note lives from the event to
    # the last range of its text merged, which may be a moment after the run ended)
    page.add_init_script(
        """window.__notes = {};
        new MutationObserver(() => {
          for (const el of document.querySelectorAll('[data-testid$="-text-pending"]')) {
            const seen = (window.__notes[el.dataset.testid] ??= []);
            const t = el.textContent.replace(/\\s+/g, ' ').trim();
            if (seen[seen.length - 1] !== t) seen.push(t);
          }
        }).observe(document, { childList: true, subtree: true, characterData: true });"""
    )

    def on_socket(ws: Any) -> None:
        def on_frame(payload: str | bytes) -> None:
            if isinstance(payload, str) and '"type":"jaxpr_split"' in payload:
                split.extend(e for e in frame_objects(payload) if e["type"] == "jaxpr_split")

        ws.on("framereceived", on_frame)

    page.on("websocket", on_socket)
    run_real(page, "partial_eval", code, timeout=240_000)
    texts = {"known": "jaxpr-text", "unknown": "unknown-jaxpr-text", "jvp": "jvp-jaxpr-text"}
    for testid in texts.values():
        expect(page.get_by_test_id(f"{testid}-text-pending")).to_have_count(0, timeout=60_000)
    notes: dict[str, list[str]] = page.evaluate("window.__notes")
    for view, testid in texts.items():
        ranges = [r for r in split[0].get("list_ranges", []) if r["field"] == f"{view}.text"]
        assert ranges, view  # JAX's text of this view came in ranges
        head = len(split[0][view]["text"])
        chars = sum(r["stop"] - r["start"] for r in ranges)
        assert chars == ranges[-1]["stop"] - head
        n = len(ranges)
        assert notes.get(f"{testid}-text-pending", [""])[0] == (
            f"This text is cut: {chars:,} more characters (in {n} range{'' if n == 1 else 's'}) "
            "come once the run has ended."
        ), (view, notes)
    assert console_errors == []


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_a_jitted_gpt_stack_arrives_whole_in_the_page(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """``f = jax.jit(f)``: the jaxpr is one call eqn holding the whole model, sent inside the
    eqn in list ranges (design 0045); once the run ended the page has JAX's whole text."""
    code = GPT + "\n\nf = jax.jit(f)\n"
    snippet = load_snippet(code)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["jit"]
    last_line = str(closed).rstrip("\n").rsplit("\n", 1)[-1].strip()
    frames: list[int] = []  # the lengths of the items_sent answers the page received

    def on_socket(ws: Any) -> None:
        def on_frame(payload: str | bytes) -> None:
            if isinstance(payload, str) and '"type":"items_sent"' in payload:
                answers = [e for e in frame_objects(payload) if e["type"] == "items_sent"]
                frames.extend(len(json.dumps(e, separators=(",", ":")).encode()) for e in answers)

        ws.on("framereceived", on_frame)

    page.on("websocket", on_socket)
    run_real(page, "tracing", code, timeout=120_000)
    text = page.get_by_test_id("jaxpr-text")
    for _ in range(50):
        text.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        if last_line in text.inner_text():
            break
        page.wait_for_timeout(200)
    expect(text).to_contain_text(last_line)
    assert frames and max(frames) < 2**20, frames  # it came in ranges, each under 1 MiB
    # JAX prints the jaxprs it names (the jitted f, shared helpers) before the top-level jaxpr;
    # folded (the default) they are one row, and eqn 0 is the top-level `jit[name=f jaxpr=f]`
    # line with the top-level `{ lambda` above it, not a line inside f.
    lines = str(closed).split("\n")
    top = next(i for i, line in enumerate(lines) if line.startswith("{ lambda "))
    named = [line.split(" ")[1] for line in lines[:top] if line.startswith("let ")]
    assert "f" in named, named
    call = next(line for line in lines[top:] if "jit[name=f jaxpr=f]" in line)
    expect(page.get_by_test_id("jaxpr-fold")).to_be_checked()
    eqn0 = page.get_by_test_id("eqn-0")
    expect(eqn0).to_have_count(1)
    eqn0.scroll_into_view_if_needed()
    expect(eqn0.locator(".line").first).to_have_text(call)
    # It calls the named f: its wrapped arguments are shown, there is no inner jaxpr to fold.
    expect(eqn0).not_to_contain_text("lines of inner jaxpr folded")
    page.screenshot(path=str(screenshots / "real-gpt-jit-tracing-eqn0.png"))
    text.evaluate("el => { el.scrollTop = 0; }")
    expect(page.get_by_test_id("jaxpr-text-named-fold")).to_have_text(
        f"… {top} lines of named jaxprs ({', '.join(named)}) folded …"
    )
    # Folded (the default), the top-level header's inputs are rows of their own named by key
    # path (design 0055): the header row is `{ lambda ;`, then the first input's binder.
    header = lines[top].split(" ")
    assert header[:3] == ["{", "lambda", ";"]
    expect(text.locator(".line").nth(1)).to_have_text("{ lambda ;")
    expect(text.locator(".line").nth(2)).to_contain_text(header[3])
    page.screenshot(path=str(screenshots / "real-gpt-jit-tracing.png"))
    # the call eqn's 150 in-avals: the first 8 in its row of the eqn stream, then a count
    n_in = len(closed.jaxpr.eqns[0].invars)
    assert n_in > 8
    row = page.get_by_test_id("recorded-eqn-0")
    expect(row.get_by_test_id("avals-more")).to_have_text(f"+{n_in - 8} more")
    assert console_errors == []


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_a_jitted_gpt_stacks_graph_groups_the_jit_by_its_layers(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """``f = jax.jit(f)``: the graph's one `jit` eqn expands in place into the model's name
    scopes, one collapsed group per layer (not ~900 ungrouped eqns); layer3 expands into its
    calls, `attention` into its eqns, and clicking one selects the call eqn in the eqn stream
    and the inner eqn's own line in the editor. The layers and lines are JAX's own (the jit's
    inner jaxpr from `jax.make_jaxpr`, each eqn's `source_info`; its name stacks are relative
    to the jit)."""
    code = GPT + "\n\nf = jax.jit(f)\n"
    snippet = load_snippet(code)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    assert [e.primitive.name for e in closed.jaxpr.eqns] == ["jit"]
    inner = closed.jaxpr.eqns[0].params["jaxpr"].jaxpr
    stacks = [str(e.source_info.name_stack) for e in inner.eqns]
    layers = [f"layer{i}" for i in range(12)]
    assert {s.split("/")[0] for s in stacks if s} == set(layers)
    layer3 = [j for j, s in enumerate(stacks) if s.split("/")[0] == "layer3"]
    run_real(page, "tracing", code, timeout=120_000)
    page.get_by_test_id("tab-graph").click()
    plus = page.locator("[data-testid='graph-expand'][data-group='x:0']")
    expect(plus).to_be_visible(timeout=60_000)
    plus.click()
    group = "[data-testid='graph-group'][data-group-label='{}']"
    expect(page.locator(group.format("layer0"))).to_be_visible(timeout=60_000)
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    # Collapsed: the layers' groups, a few eqns outside them, far fewer nodes than eqns.
    inner_nodes = page.locator("[data-testid='graph-inner-eqn']")
    assert inner_nodes.count() < 40, inner_nodes.count()
    labels = page.locator("[data-testid='graph-group'][data-group-label^='layer']")
    seen = _seen_scrolling(page, labels, "data-group-label")
    assert {s for s in seen if re.fullmatch(r"layer\d+", s)} == set(layers), seen
    # layer3: a box inside the jit's box, around block's calls.
    _scroll_graph_until(page, page.locator(group.format("layer3")))
    page.locator(group.format("layer3")).scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "real-gpt-jit-graph-layers.png"))
    page.locator(group.format("layer3")).click()
    expect(page.locator("[data-testid='graph-cluster'][data-group-label='layer3']")).to_be_visible(
        timeout=30_000
    )
    attention = page.locator("[data-testid='graph-group'][data-group-label^='attention (line']")
    expect(attention.first).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    attention.first.click()
    box = page.locator("[data-testid='graph-cluster'][data-group-label^='attention (line']")
    expect(box.first).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    expect(inner_nodes.first).to_be_visible(timeout=30_000)
    shown = [
        int((p or "").rsplit("/", 1)[1])
        for p in inner_nodes.evaluate_all("els => els.map(e => e.getAttribute('data-path'))")
    ]
    dots = [j for j in shown if j in layer3 and inner.eqns[j].primitive.name == "dot_general"]
    assert dots, shown
    j = dots[0]
    line = _snippet_line(inner.eqns[j])
    assert line is not None and GPT.splitlines()[line - 1].strip().startswith("q, k, v")
    node = page.locator(f"[data-testid='graph-inner-eqn'][data-path='0/jaxpr0/{j}']")
    node.click()
    expect(page.get_by_test_id("recorded-eqn-0")).to_have_attribute("aria-pressed", "true")
    selected = page.get_by_test_id("editor").locator(".cm-line.cm-js-selected")
    expect(selected).to_have_text(code.splitlines()[line - 1])
    node.scroll_into_view_if_needed()
    page.get_by_test_id("dataflow-graph").scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "real-gpt-jit-graph-layer3.png"))
    assert console_errors == []


def test_the_picker_offers_the_real_programs_and_they_run(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """Tracing's picker lists examples/real under "real programs"; choosing cnn32 puts the file
    in the editor byte for byte, and it runs to the end. Switching to jvp (which offers it too)
    keeps it; switching to caches (which does not) loads caches' default example."""
    real = Path(__file__).resolve().parent.parent / "examples" / "real"
    page.set_viewport_size({"width": 1400, "height": 1200})  # every line of cnn32 rendered
    open_exhibit(page, "tracing")
    group = page.get_by_test_id("example-real-programs")
    expect(group.locator("option")).to_have_count(len(list(real.glob("*.py"))))
    page.get_by_test_id("example-select").select_option("real/cnn32")
    expect(page.get_by_test_id("editor").locator(".cm-line").first).to_have_text(
        (real / "cnn32.py").read_text().splitlines()[0]
    )
    assert editor_text(page) == (real / "cnn32.py").read_text()
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=120_000)
    page.get_by_test_id("exhibit-jvp").click()
    expect(page.get_by_test_id("example-select")).to_have_value("real/cnn32")
    page.screenshot(path=str(screenshots / "real-programs-picker.png"))
    page.get_by_test_id("exhibit-caches").click()
    expect(page.get_by_test_id("example-select")).not_to_have_value("real/cnn32")
    assert editor_text(page) != (real / "cnn32.py").read_text()
    assert console_errors == []


CLOSES_OVER = """
import jax.numpy as jnp

consts = [jnp.full((3,), float(i)) for i in range(400)]


def f(x):
    total = x
    for c in consts:
        total = total * 0.5 + c
    return total.sum()


args = (jnp.ones(3),)
"""


def test_the_structure_tab_windows_hundreds_of_constvars(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """A function closing over 400 arrays: the structure tab holds the constvars in view
    only, and the last one, scrolled to, shows its value as JAX holds it."""
    snippet = load_snippet(CLOSES_OVER)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    assert len(closed.consts) == 400
    run_real(page, "tracing", CLOSES_OVER, timeout=120_000)
    page.get_by_test_id("tab-structure").click()
    expect(page.get_by_test_id("constvar-0")).to_be_visible()
    assert page.locator("[data-testid^='constvar-']").count() < 100
    box = page.get_by_test_id("jaxpr-constvars").locator(".invar-box")
    last = page.get_by_test_id("constvar-399")
    for _ in range(50):
        box.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        if last.count():
            break
        page.wait_for_timeout(100)
    expect(last).to_contain_text(f"{float(closed.consts[-1][0]):.0f}.")
    assert page.locator("[data-testid^='constvar-']").count() < 100
    page.screenshot(path=str(screenshots / "real-structure-constvars.png"))
    assert console_errors == []
