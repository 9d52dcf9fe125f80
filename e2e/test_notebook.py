"""``jaxscope.show`` in a real notebook (design 0034; issue 18 item 2, issue 31): a small
notebook is executed with ``nbclient`` on an ``ipykernel`` of this venv, saved and read back, and
its output cells are opened in real Chromium with the network off, in order as a reopened
notebook renders them. The first exhibit output carries the app once; each output carries its
run and a loader that shows it in a sandboxed iframe. The exhibits inside must show JAX's own
jaxpr of the notebook's ``f`` and walk their events with the stepper.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
from nbclient import NotebookClient
from playwright.sync_api import Browser, Page, expect

ROOT = Path(__file__).resolve().parents[1]
# The default tracing example, as a cell: its definitions, then show(f, *args).
MLP = (ROOT / "exhibits" / "tracing" / "examples" / "mlp_loss.py").read_text()
MLP = MLP.split('if __name__ == "__main__":')[0]

CELLS = [
    "import jax\nimport jax.numpy as jnp\nimport jaxscope\n\nSCALE = 2.0",
    "def helper(x):\n    return jnp.sin(x) * SCALE\n\n\n@jax.jit\ndef loss(x, y):\n"
    "    return jnp.sum(helper(x) + y)",
    "jaxscope.show(loss, jnp.arange(3.0), 1.0)",
    MLP + "\njaxscope.show(f, *args)",
    "jaxscope.show(lambda x: jnp.cos(x) * SCALE, jnp.ones(2))",
]
# The size of one output before issue 31: the whole standalone file in an iframe's srcdoc.
MAX_OUTPUT_BYTES = 300_000


def expected_jaxpr() -> str:
    def helper(x: jax.Array) -> jax.Array:
        return jnp.sin(x) * 2.0

    @jax.jit
    def loss(x: jax.Array, y: float) -> jax.Array:
        return jnp.sum(helper(x) + y)

    return str(jax.make_jaxpr(loss)(jnp.arange(3.0), 1.0))


def _open(browser: Browser, path: Path, body: str) -> tuple[Page, list[str]]:
    path.write_text(f"<!doctype html><html><body>{body}</body></html>")
    context = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    return page, errors


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

    cells_html: list[str] = []
    for cell in reopened.cells[2:]:
        assert [o["output_type"] for o in cell.outputs] == ["execute_result"]
        cells_html.append(cell.outputs[0]["data"]["text/html"])
    sizes = [len(h.encode()) for h in cells_html]
    print(f"output sizes: {sizes}; notebook: {saved.stat().st_size:,} bytes")
    # The app once, in the first output; the others carry their run only.
    assert [('class="jaxscope-app"' in h) for h in cells_html] == [True, False, False]
    assert sizes[0] > 1_000_000 and sizes[1] <= MAX_OUTPUT_BYTES and sizes[2] <= MAX_OUTPUT_BYTES
    assert saved.stat().st_size < sizes[0] + 2 * MAX_OUTPUT_BYTES

    # The output cells as a notebook page shows them, in order, opened from disk offline.
    body = "".join(f"<h3>Out[{i}]:</h3>{h}" for i, h in enumerate(cells_html, 3))
    page, errors = _open(browser, tmp_path / "outputs.html", body)
    frames = page.locator("iframe.jaxscope-show")
    expect(frames).to_have_count(3)
    for i in range(3):
        frame = page.frame_locator("iframe.jaxscope-show").nth(i)
        expect(frame.get_by_test_id("recorded-banner")).to_contain_text(f"jax {jax.__version__}")
        expect(frame.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    frame = page.frame_locator("iframe.jaxscope-show").first
    fold = frame.get_by_test_id("jaxpr-fold")
    if fold.count() and fold.is_checked():
        fold.uncheck()  # the jit eqn's inner jaxpr, folded by default
    assert frame.get_by_test_id("jaxpr-text").inner_text().strip() == expected_jaxpr()
    # The user's code, read-only beside the exhibit: not the generated argument code.
    code = "\n".join(frame.get_by_test_id("editor").locator(".cm-line").all_inner_texts())
    assert "def loss(x, y):" in code and "def helper(x):" in code and "SCALE = 2.0" in code
    assert "_jaxscope_array" not in code and "# args = (float32[3], 1.0)" in code
    lam = page.frame_locator("iframe.jaxscope-show").nth(2)
    lam_code = "\n".join(lam.get_by_test_id("editor").locator(".cm-line").all_inner_texts())
    assert "f = lambda x: jnp.cos(x) * SCALE" in lam_code
    frame.get_by_test_id("stepper-first").click()
    expect(frame.get_by_test_id("stepper-event-type")).to_have_text("run_started")
    frame.get_by_test_id("stepper-last").click()
    page.screenshot(path=str(screenshots / "notebook-show.png"))
    page.context.close()
    assert errors == []

    # An output rendered before the one that carries the app waits for it, then shows.
    body = cells_html[1] + "<hr>" + cells_html[0]
    page, errors = _open(browser, tmp_path / "reversed.html", body)
    expect(page.locator("iframe.jaxscope-show")).to_have_count(2)
    later = page.frame_locator("iframe.jaxscope-show").first
    expect(later.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    page.context.close()
    # Without the carrier, the output says why it shows nothing.
    page, errors = _open(browser, tmp_path / "alone.html", cells_html[1])
    expect(page.locator(".jaxscope-note")).to_contain_text("jaxscope.notebook.app()")
    assert page.locator("iframe").count() == 0
    page.context.close()
