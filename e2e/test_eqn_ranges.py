"""Eqn ranges in the page (design 0045): the 12-layer GPT stack's jaxpr arrives with its first
eqns; scrolled to its end, the page has asked for the rest range by range, and its text is JAX's
own (``str(jax.make_jaxpr(f)(*args))``, computed here) byte for byte; no frame over 1 MiB.
Real Chromium against a real ``jaxscope serve``."""

from __future__ import annotations

import re
from pathlib import Path

import jax
import pytest
from jaxscope.sandbox.snippet import load_snippet
from playwright.sync_api import Page, WebSocketRoute, expect

from e2e.browser import open_exhibit, set_code

# One test process runs every real-program test, one after another (docs/design/0049-test-time.md).
pytestmark = pytest.mark.xdist_group("real_programs")

ROOT = Path(__file__).resolve().parent.parent
GPT = (ROOT / "examples" / "real" / "gpt_stack.py").read_text()
MIB = 2**20


def test_the_gpt_stack_text_scrolled_to_its_end_is_jaxs_text(
    page: Page, console_errors: list[str], screenshots: Path, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 1400, "height": 1000})
    frames: list[int] = []
    page.on(
        "websocket",
        lambda ws: ws.on("framereceived", lambda p: frames.append(len(str(p).encode()))),
    )
    open_exhibit(page, "tracing")
    set_code(page, GPT)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=120_000)
    snippet = load_snippet(GPT)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)
    jax_text = str(closed)
    total = len(closed.jaxpr.eqns)
    note = page.get_by_test_id("jaxpr-summary-note")
    expect(note).to_contain_text(f"of {total:,} eqns loaded")
    before = sum(frames)
    box = page.get_by_test_id("jaxpr-text")
    ranges_line = page.get_by_test_id("jaxpr-text-ranges-line")
    page.screenshot(path=str(screenshots / "eqn-ranges-gpt-first.png"))
    # Scroll to the end until no range is left (each scroll shows the ranges line, which asks
    # for the next range).
    for _ in range(200):
        box.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        if note.count() == 0:
            break
        page.wait_for_timeout(100)
    expect(note).to_have_count(0)
    expect(ranges_line).to_have_count(0)
    box.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    # The last lines drawn are JAX's last lines.
    expect(box.locator(".line").last).to_have_text(jax_text.splitlines()[-1])
    expect(box).to_contain_text(jax_text.splitlines()[-2].strip())
    box.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "eqn-ranges-gpt-end.png"))
    # The whole text, as the page holds it (its Download), is JAX's text byte for byte.
    with page.expect_download() as info:
        page.get_by_test_id("jaxpr-text-export-download").click()
    path = tmp_path / "jaxpr.txt"
    info.value.save_as(path)
    assert path.read_text() == jax_text
    after = sum(frames)
    assert max(frames) <= MIB, max(frames)
    assert after > before  # the ranges came after the run, as the text was scrolled
    print(f"streamed before scrolling: {before:,} B; after: {after:,} B; frames {len(frames)}")
    assert console_errors == []


@pytest.mark.full  # the 12-layer stack: make test-all (design 0058)
def test_opening_the_graph_completes_the_gpt_stack_a_range_at_a_time(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    """The run sends the start of the 928-eqn view; opening the graph fetches the rest (a range
    at a time, each frame at most 1 MiB) until the graph draws all 928 eqns and says nothing is
    left out. A search entered and "expand all" clicked while the ranges are held back (the
    test's websocket route keeps each answer until the test lets it through) hold as they
    arrive: the search keeps its text and selected hit, its hits those of every eqn."""
    frames: list[int] = []
    held: list[str | bytes] = []
    holding = [True]
    routes: list[WebSocketRoute] = []

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        routes.append(ws)

        def to_page(message: str | bytes) -> None:
            frames.append(len(message.encode() if isinstance(message, str) else message))
            if holding[0] and isinstance(message, str) and '"type":"jaxpr_eqns_sent"' in message:
                held.append(message)
            else:
                ws.send(message)

        server.on_message(to_page)
        ws.on_message(lambda message: server.send(message))

    page.route_web_socket(re.compile(r".*/api/ws.*"), route)
    page.set_viewport_size({"width": 1400, "height": 1000})
    snippet = load_snippet(GPT)
    eqns = jax.make_jaxpr(snippet.f)(*snippet.args).jaxpr.eqns
    rsqrts = [i for i, e in enumerate(eqns) if e.primitive.name == "rsqrt"]
    open_exhibit(page, "tracing")
    set_code(page, GPT)
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished", timeout=120_000)
    page.get_by_test_id("tab-graph").click()
    # The graph asked for the first range; its answer is held: the graph has the view's head.
    summarised = page.get_by_test_id("graph-summarised")
    expect(summarised).to_contain_text(f"of {len(eqns):,} eqns")
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(100)
    assert len(held) == 1, len(held)
    head = int(summarised.inner_text().split("first ")[1].split(" of")[0].replace(",", ""))
    assert head < len(eqns)
    in_head = [i for i in rsqrts if i < head]
    assert 2 <= len(in_head) < len(rsqrts), (head, rsqrts)
    search = page.get_by_test_id("graph-search")
    count = page.get_by_test_id("graph-search-count")
    search.fill("rsqrt")
    search.press("Enter")
    expect(count).to_have_text(f"1 of {len(in_head)}")
    search.press("Enter")  # the second hit selected
    expect(count).to_have_text(f"2 of {len(in_head)}")
    expect(page.get_by_test_id(f"graph-eqn-{rsqrts[1]}")).to_have_class(re.compile(r"\bhit\b"))
    page.get_by_test_id("graph-expand-all").click()
    page.screenshot(path=str(screenshots / "eqn-ranges-gpt-graph-search-head.png"))
    # Let the held answer through and every next one as it comes: the view grows to 928 eqns.
    holding[0] = False
    for message in held:
        routes[-1].send(message)
    expect(page.locator("[data-testid='dataflow-graph'] svg")).to_have_attribute(
        "aria-label", "dataflow graph of 928 eqns", timeout=60_000
    )
    expect(summarised).to_have_count(0)
    expect(page.get_by_test_id("graph-busy")).to_have_count(0, timeout=60_000)
    # The search held: its text, the same hit selected, its hits every rsqrt of the program.
    expect(search).to_have_value("rsqrt")
    expect(count).to_have_text(f"2 of {len(rsqrts)}")
    expect(page.get_by_test_id(f"recorded-eqn-{rsqrts[1]}")).to_have_attribute(
        "aria-pressed", "true"
    )
    # Still every group expanded: no group node is drawn collapsed; a layout row per eqn.
    expect(page.get_by_test_id("graph-group")).to_have_count(0)
    height = int(page.get_by_test_id("dataflow-graph").evaluate("el => el.scrollHeight"))
    assert height > 928 * 20, height
    assert max(frames) <= MIB, max(frames)
    page.screenshot(path=str(screenshots / "eqn-ranges-gpt-graph.png"))
    # Enter steps on from there, to the first hit a later range brought.
    for _ in range(len(in_head) - 1):
        search.press("Enter")
    expect(count).to_have_text(f"{len(in_head) + 1} of {len(rsqrts)}")
    expect(page.get_by_test_id(f"recorded-eqn-{rsqrts[len(in_head)]}")).to_have_attribute(
        "aria-pressed", "true"
    )
    assert console_errors == []
