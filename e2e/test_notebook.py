"""``jaxscope.show`` in a real notebook (design 0034; issue 18 item 2): a small notebook is
executed with ``nbclient`` on an ``ipykernel`` of this venv, saved and read back, and its output
cell (static HTML: an iframe whose ``srcdoc`` is the run's standalone file) is opened in real
Chromium with the network off. The exhibit inside must show JAX's own jaxpr of the notebook's
``f`` and walk its events with the stepper.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
from nbclient import NotebookClient
from playwright.sync_api import Browser, expect

CELLS = [
    "import jax\nimport jax.numpy as jnp\nimport jaxscope\n\nSCALE = 2.0",
    "def helper(x):\n    return jnp.sin(x) * SCALE\n\n\n@jax.jit\ndef loss(x, y):\n"
    "    return jnp.sum(helper(x) + y)",
    "jaxscope.show(loss, jnp.arange(3.0), 1.0)",
]


def expected_jaxpr() -> str:
    def helper(x: jax.Array) -> jax.Array:
        return jnp.sin(x) * 2.0

    @jax.jit
    def loss(x: jax.Array, y: float) -> jax.Array:
        return jnp.sum(helper(x) + y)

    return str(jax.make_jaxpr(loss)(jnp.arange(3.0), 1.0))


def test_show_in_an_executed_and_saved_notebook_displays_the_exhibit(
    tmp_path: Path, browser: Browser, screenshots: Path
) -> None:
    notebook = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    notebook.cells = [nbformat.v4.new_code_cell(s) for s in CELLS]  # type: ignore[no-untyped-call]
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={}).execute()
    saved = tmp_path / "show.ipynb"
    nbformat.write(notebook, saved)  # type: ignore[no-untyped-call]
    # What a reopened notebook renders.
    reopened = nbformat.read(saved, as_version=4)  # type: ignore[no-untyped-call]

    outputs = reopened.cells[-1].outputs
    assert [o["output_type"] for o in outputs] == ["execute_result"]
    cell_html: str = outputs[0]["data"]["text/html"]
    assert cell_html.startswith('<iframe class="jaxscope-show"')
    assert "<script" not in cell_html  # all of it inside srcdoc, escaped: static HTML
    srcdoc = html.unescape(re.search(r'srcdoc="([^"]*)"', cell_html).group(1))  # type: ignore[union-attr]
    assert 'id="jaxscope-recording"' in srcdoc

    # The output cell as a notebook page shows it, opened from disk with no network.
    page_file = tmp_path / "output.html"
    page_file.write_text(f"<!doctype html><html><body><h3>Out[3]:</h3>{cell_html}</body></html>")
    context = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(page_file.as_uri())
    frame = page.frame_locator("iframe.jaxscope-show")
    expect(frame.get_by_test_id("recorded-banner")).to_contain_text(f"jax {jax.__version__}")
    expect(frame.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    fold = frame.get_by_test_id("jaxpr-fold")
    if fold.count() and fold.is_checked():
        fold.uncheck()  # the jit eqn's inner jaxpr, folded by default
    assert frame.get_by_test_id("jaxpr-text").inner_text().strip() == expected_jaxpr()
    # The snippet that ran: the cells' definitions, read-only beside the exhibit.
    code = "\n".join(frame.get_by_test_id("editor").locator(".cm-line").all_inner_texts())
    assert "def loss(x, y):" in code and "def helper(x):" in code and "SCALE = 2.0" in code
    frame.get_by_test_id("stepper-first").click()
    expect(frame.get_by_test_id("stepper-event-type")).to_have_text("run_started")
    frame.get_by_test_id("stepper-last").click()
    page.screenshot(path=str(screenshots / "notebook-show.png"))
    context.close()
    assert errors == []
