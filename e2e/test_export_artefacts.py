"""Export buttons of the shared widgets (design 0035), in real Chromium: Copy and Download of the
tracing exhibit's jaxpr give JAX's own text; the dataflow graph downloads as an SVG that parses
and holds every eqn node, and as a PNG of the SVG's size times PNG_SCALE."""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
from jaxscope.sandbox.snippet import load_snippet
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code
from e2e.replay import replay_runs
from exhibits.registry import EXHIBITS

SVG = "{http://www.w3.org/2000/svg}"
PNG_SCALE = 2  # frontend/src/widgets/export.ts


def default_source(exhibit: str) -> str:
    ex = EXHIBITS[exhibit]
    return ex.example_paths()[ex.default_example].read_text("utf-8")


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    return width, height


def test_copy_and_download_the_jaxpr_and_the_graph(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    source = default_source("tracing")
    snippet = load_snippet(source)
    jaxpr = jax.make_jaxpr(snippet.f, static_argnums=snippet.static_argnums)(*snippet.args)
    want = str(jaxpr)

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    answered = replay_runs(page, "tracing", EXHIBITS["tracing"].default_example)
    open_exhibit(page, "tracing")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert len(answered) == 1, answered

    copy = page.get_by_test_id("jaxpr-text-export-copy")
    expect(copy).to_have_attribute("title", "Copy the jaxpr text")
    section = page.locator('section[aria-labelledby="tr-jaxpr"]')
    section.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "export-jaxpr-buttons.png"))
    copy.click()
    expect(page.get_by_test_id("jaxpr-text-export-note")).to_have_text("copied")
    assert page.evaluate("navigator.clipboard.readText()") == want

    # Keyboard: the Download button is focusable and pressed with Enter.
    page.get_by_test_id("jaxpr-text-export-download").focus()
    with page.expect_download() as got:
        page.keyboard.press("Enter")
    download = got.value
    assert download.suggested_filename == "tracing-jaxpr.txt"
    assert Path(download.path()).read_text("utf-8") == want

    page.get_by_test_id("tab-graph").click()
    expect(page.get_by_test_id("graph-eqn-0")).to_be_visible()
    page.get_by_test_id("graph-export-svg").scroll_into_view_if_needed()
    section.screenshot(path=str(screenshots / "export-graph-buttons.png"))

    with page.expect_download() as got:
        page.get_by_test_id("graph-export-svg").click()
    assert got.value.suggested_filename == "tracing-graph.svg"
    svg_text = Path(got.value.path()).read_text("utf-8")
    root = ET.fromstring(svg_text.encode("utf-8"))
    assert root.tag == f"{SVG}svg"
    width, height = float(root.attrib["width"]), float(root.attrib["height"])
    eqn_nodes = {
        g.attrib["data-testid"]: g
        for g in root.iter(f"{SVG}g")
        if g.attrib.get("data-testid", "").startswith("graph-eqn-")
    }
    assert set(eqn_nodes) == {f"graph-eqn-{i}" for i in range(len(jaxpr.eqns))}
    for i, eqn in enumerate(jaxpr.eqns):
        labels = [t.text or "" for t in eqn_nodes[f"graph-eqn-{i}"].iter(f"{SVG}text")]
        assert any(eqn.primitive.name in label for label in labels), (i, labels)
    # Standalone: styles are inlined values, not the page's variables.
    assert "var(--" not in svg_text
    assert 'style="fill:' in svg_text

    with page.expect_download() as got:
        page.get_by_test_id("graph-export-png").click()
    assert got.value.suggested_filename == "tracing-graph.png"
    png = Path(got.value.path()).read_bytes()
    assert len(png) > 1000
    assert png_size(png) == (int(width * PNG_SCALE), int(height * PNG_SCALE))
    (screenshots / "export-graph-download.png").write_bytes(png)
    assert console_errors == []


def test_the_prng_key_tree_downloads_as_svg_and_png(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """An HTML picture (html-to-image): the key tree's SVG parses and holds the keys shown."""
    answered = replay_runs(page, "prng", EXHIBITS["prng"].default_example)
    open_exhibit(page, "prng")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert len(answered) == 1, answered
    shown = page.get_by_test_id("key-out").all_inner_texts()
    assert shown
    tree = page.locator('section[aria-labelledby="prng-tree"]')
    tree.scroll_into_view_if_needed()
    tree.screenshot(path=str(screenshots / "export-key-tree-buttons.png"))

    with page.expect_download() as got:
        page.get_by_test_id("key-tree-export-svg").click()
    assert got.value.suggested_filename == "prng-key-tree.svg"
    svg_text = Path(got.value.path()).read_text("utf-8")
    root = ET.fromstring(svg_text.encode("utf-8"))
    assert root.tag == f"{SVG}svg"
    for key in shown:
        assert key in svg_text

    with page.expect_download() as got:
        page.get_by_test_id("key-tree-export-png").click()
    assert got.value.suggested_filename == "prng-key-tree.png"
    png = Path(got.value.path()).read_bytes()
    width, height = png_size(png)
    # html-to-image draws the list at its client size (no border here), PNG_SCALE pixels each.
    size = (
        page.get_by_test_id("key-tree")
        .locator("> div")
        .evaluate("el => [el.clientWidth, el.clientHeight]")
    )
    assert (width, height) == (size[0] * PNG_SCALE, size[1] * PNG_SCALE)
    (screenshots / "export-key-tree-download.png").write_bytes(png)
    assert console_errors == []


def test_stablehlo_downloads_as_mlir(page: Page, console_errors: list[str]) -> None:
    """CodeText's Download: the stations exhibit's StableHLO is Lowered.as_text(), as .mlir."""
    source = default_source("stations")
    snippet = load_snippet(source)
    lowered = jax.jit(snippet.f, static_argnums=snippet.static_argnums).lower(*snippet.args)
    answered = replay_runs(page, "stations", EXHIBITS["stations"].default_example)
    open_exhibit(page, "stations")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    assert len(answered) == 1, answered
    with page.expect_download() as got:
        page.get_by_test_id("stablehlo-text-export-download").click()
    assert got.value.suggested_filename == "stations-stablehlo.mlir"
    assert Path(got.value.path()).read_text("utf-8") == lowered.as_text()
    assert console_errors == []


def test_device_grid_and_timeline_download(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The sharding device grid and the caches timeline (HTML pictures) as SVG and PNG."""
    for exhibit, section, testid, artefact, shown in [
        ("sharding", "sh-grid", "device-grid-export", "device-grid", "device-grid"),
        ("caches", "caches-timeline", "timeline-export", "timeline", "caches-timeline"),
    ]:
        open_exhibit(page, exhibit)
        run_and_wait(page)
        expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
        panel = page.locator(f'section[aria-labelledby="{section}"]')
        panel.scroll_into_view_if_needed()
        panel.screenshot(path=str(screenshots / f"export-{artefact}-buttons.png"))
        with page.expect_download() as got:
            page.get_by_test_id(f"{testid}-svg").click()
        assert got.value.suggested_filename == f"{exhibit}-{artefact}.svg"
        svg_text = Path(got.value.path()).read_text("utf-8")
        assert ET.fromstring(svg_text.encode("utf-8")).tag == f"{SVG}svg"
        # Every cell's text is in the picture (the first few, as the page shows them).
        cells = page.get_by_test_id(shown).locator(".cell, [data-testid^=device-cell-]")
        texts = cells.all_inner_texts()[:4]
        assert texts, f"no cells in {shown}"
        for text in texts:
            for word in text.split():
                assert word in svg_text or word.replace("&", "&amp;") in svg_text, word
        with page.expect_download() as got:
            page.get_by_test_id(f"{testid}-png").click()
        png = Path(got.value.path()).read_bytes()
        width, height = png_size(png)
        assert width > 100 and height > 20
        (screenshots / f"export-{artefact}-download.png").write_bytes(png)
    assert console_errors == []


LONG = """import jax.numpy as jnp

def f(x):
    for _ in range(300):
        x = jnp.sin(x) * 1.01
    return x

args = (jnp.ones(3),)
"""


def test_a_large_graph_exports_whole(page: Page, console_errors: list[str]) -> None:
    """Past 400 nodes the page draws only the nodes in view; the SVG holds every eqn node."""
    snippet = load_snippet(LONG)
    n_eqns = len(jax.make_jaxpr(snippet.f)(*snippet.args).eqns)
    assert n_eqns == 600
    open_exhibit(page, "tracing")
    set_code(page, LONG)
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    page.get_by_test_id("tab-graph").click()
    # 600 eqns open in chunks (groups of at most 500, collapsed): expand them all.
    page.get_by_test_id("graph-expand-all").click()
    expect(page.get_by_test_id("graph-eqn-0")).to_be_attached(timeout=30_000)
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=30_000)
    in_dom = page.locator("[data-testid^=graph-eqn-]").count()
    assert in_dom < n_eqns  # windowed: only what is in view
    with page.expect_download() as got:
        page.get_by_test_id("graph-export-svg").click()
    root = ET.fromstring(Path(got.value.path()).read_bytes())
    ids = {
        g.attrib["data-testid"]
        for g in root.iter(f"{SVG}g")
        if g.attrib.get("data-testid", "").startswith("graph-eqn-")
    }
    assert ids == {f"graph-eqn-{i}" for i in range(n_eqns)}
    # The page went back to drawing what is in view.
    expect(page.locator("[data-testid^=graph-eqn-]")).to_have_count(in_dom)
    assert console_errors == []
