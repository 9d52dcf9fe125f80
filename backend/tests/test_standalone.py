"""The standalone HTML writer (``jaxscope.standalone``) and ``jaxscope run --html`` (design 0034).

What the file must hold is checked here without a browser: the recording read back as a
browser's HTML parser ends the script element (a ``</script>`` in the code must not cut it), the
whole event stream of the run (the same events ``--json`` streams), JAX's own jaxpr text among
them; and the refusals (no template built, an unwritable path). The file opened in Chromium is
``e2e/test_standalone.py``.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jaxscope.protocol import RunOptions
from jaxscope.standalone import RECORDING_FORMAT, RECORDING_ID, TEMPLATE, embed, recording

ROOT = Path(__file__).resolve().parents[2]
JAXSCOPE = ROOT / ".venv" / "bin" / "jaxscope"

# The single-file build's shape: the bundle inline in <head> (which may spell "</body>" in a
# string), the page's own </body> last.
TEMPLATE_TEXT = (
    '<!doctype html><html><head><script type="module">const s = "</body>";</script></head>'
    '<body><div id="app"></div></body></html>'
)

SNIPPET = """import jax.numpy as jnp

def f(x):
    # "</script><!-- </SCRIPT>" stays text
    return jnp.sum(jnp.sin(x) * 2.0)

args = (jnp.ones(3),)
"""


class _Scripts(HTMLParser):
    """The text of each script element, by id, as an HTML parser ends it."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: dict[str, str] = {}
        self._id: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._id = dict(attrs).get("id") or ""
            self.texts[self._id] = ""

    def handle_data(self, data: str) -> None:
        if self._id is not None:
            self.texts[self._id] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._id = None


def embedded(html: str) -> dict[str, Any]:
    parser = _Scripts()
    parser.feed(html)
    value: dict[str, Any] = json.loads(parser.texts[RECORDING_ID])
    return value


def test_the_recording_reads_back_whole_whatever_the_code_holds() -> None:
    when = datetime.datetime(2026, 12, 2, 16, 7, 55, tzinfo=datetime.UTC)
    payload = recording("tracing", SNIPPET, RunOptions(), [], recorded_at=when)
    html = embed(TEMPLATE_TEXT, payload)
    assert embedded(html) == payload
    assert payload["recorded_at"] == "2026-12-02T16:07:55Z"
    assert payload["format"] == RECORDING_FORMAT
    # Before the page's own </body>, not the one inside the bundle's string.
    assert html.index(RECORDING_ID) > html.index("const s")
    assert html.endswith("</script>\n</body></html>")


def test_a_template_without_body_is_refused() -> None:
    with pytest.raises(ValueError, match="</body>"):
        embed("<html></html>", recording("tracing", "", RunOptions(), []))


def _run(tmp_path: Path, dist: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    env = {**os.environ, "JAXSCOPE_FRONTEND_DIST": str(dist)}
    return subprocess.run(
        [str(JAXSCOPE), "run", "tracing", str(snippet), *extra],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_run_html_writes_every_event_of_the_run(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    (dist / TEMPLATE).parent.mkdir(parents=True)
    (dist / TEMPLATE).write_text(TEMPLATE_TEXT)
    out = tmp_path / "run.html"
    done = _run(tmp_path, dist, "--json", "--html", str(out))
    assert done.returncode == 0, done.stderr
    streamed = [json.loads(line) for line in done.stdout.splitlines()]
    payload = embedded(out.read_text("utf-8"))
    # the file is named where the user looks (stderr: stdout is the JSON stream), with its size
    kb = f"{out.stat().st_size / 1024:,.0f} KB"
    assert f"jaxscope run --html: wrote {out} ({kb});" in done.stderr
    # The file holds the run exactly as the wire carried it, details whole (an eager run).
    assert payload["events"] == streamed
    assert payload["exhibit"] == "tracing"
    assert payload["code"] == SNIPPET
    assert payload["options"] == RunOptions().model_dump(mode="json")
    assert not [e for e in streamed if e.get("detail_id")]
    staged = next(e for e in streamed if e["type"] == "jaxpr_staged")
    truth = jax.make_jaxpr(lambda x: jnp.sum(jnp.sin(x) * 2.0))(jnp.ones(3))
    assert staged["jaxpr"]["text"] == str(truth)
    assert streamed[0]["jax_version"] == jax.__version__
    assert streamed[-1]["type"] == "run_finished"


def test_run_html_without_a_built_frontend_is_a_usage_error_before_the_run(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run.html"
    done = _run(tmp_path, tmp_path / "no-dist", "--html", str(out))
    assert done.returncode == 2
    assert "standalone/index.html is missing" in done.stderr
    assert "npm run build" in done.stderr
    assert done.stdout == ""  # nothing ran
    assert not out.exists()


def test_run_html_to_an_unwritable_place_fails_and_says_where(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    (dist / TEMPLATE).parent.mkdir(parents=True)
    (dist / TEMPLATE).write_text(TEMPLATE_TEXT)
    out = tmp_path / "missing-dir" / "run.html"
    done = _run(tmp_path, dist, "--html", str(out))
    assert done.returncode == 1
    assert f"cannot write {out}" in done.stderr
