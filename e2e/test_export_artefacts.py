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

from e2e.browser import open_exhibit, run_and_wait
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
    open_exhibit(page, "tracing")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

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
    open_exhibit(page, "prng")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
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
