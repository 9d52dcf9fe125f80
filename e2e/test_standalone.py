"""The standalone HTML file (design 0034) in real Chromium: ``jaxscope run tracing FILE --html
out.html`` through the real CLI and sandbox, then the file opened from ``file://`` with the
network off and no server running. The page must replay the run: JAX's own jaxpr text, the
stepper over every event, the user's code read-only, and "recorded run, <date>, jax <version>".

The template is the single-file build in the frontend the CLI finds (``frontend/dist`` after
``npm run build``, or ``$JAXSCOPE_FRONTEND_DIST``).
"""

from __future__ import annotations

import json
import re
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import pytest
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.standalone import RECORDING_ID, template_path
from playwright.sync_api import Browser, Page, expect

from e2e.browser import editor_text, open_exhibit, run_and_wait

ROOT = Path(__file__).resolve().parent.parent
JAXSCOPE = ROOT / ".venv" / "bin" / "jaxscope"

# A closing script tag in the code: the embedded JSON must not end early on it.
SNIPPET = """import jax.numpy as jnp

def f(x, y):
    z = jnp.sin(x) * 2.0  # "</script><!--" stays text
    w = z + y
    return jnp.sum(w)

args = (jnp.ones(3), 1.0)
"""

# What a replayed view's rerun controls say, as their title (frontend/src/recording.ts).
RERUN_LOCKED = "A recording cannot run again: run the snippet in jaxscope to change the options."


def jaxpr_of(source: str) -> str:
    snippet = load_snippet(source)
    return str(jax.make_jaxpr(snippet.f, static_argnums=snippet.static_argnums)(*snippet.args))


@pytest.fixture
def offline_page(browser: Browser) -> Iterator[tuple[Page, list[str], list[str]]]:
    """A page in a context with the network off; the URLs it requested and its console
    errors."""
    context = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    yield page, requests, errors
    context.close()


def write_html(tmp_path: Path, source: str, *extra: str, exhibit: str = "tracing") -> Path:
    if not template_path().is_file():
        pytest.fail(f"{template_path()} is missing: run `npm run build` (make test does)")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(source)
    out = tmp_path / "run.html"
    done = subprocess.run(
        [str(JAXSCOPE), "run", exhibit, str(snippet), "--html", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_the_standalone_file_replays_the_run_from_disk_with_no_network(
    tmp_path: Path, offline_page: tuple[Page, list[str], list[str]], screenshots: Path
) -> None:
    out = write_html(tmp_path, SNIPPET)
    page, requests, errors = offline_page
    page.goto(out.as_uri())

    # What was recorded, and with which JAX.
    banner = page.get_by_test_id("recorded-banner")
    expect(banner).to_contain_text(re.compile(r"recorded run, \d{4}-\d\d-\d\d \d\d:\d\d UTC"))
    expect(banner).to_contain_text(f"jax {jax.__version__}")
    expect(page.get_by_test_id("exhibit-title")).to_have_text("Tracing → jaxpr")

    # The page opens at the run's end: JAX's own jaxpr, byte for byte.
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    fold = page.get_by_test_id("jaxpr-fold")
    if fold.count() and fold.is_checked():
        fold.uncheck()
    assert page.get_by_test_id("jaxpr-text").inner_text().strip() == jaxpr_of(SNIPPET)
    expect(page.get_by_test_id("eqn-count")).to_have_text("5")
    # A recording cannot run again: "call again" is disabled and says why.
    expect(page.get_by_test_id("call-same")).to_be_disabled()
    expect(page.get_by_test_id("call-same")).to_have_attribute("title", RERUN_LOCKED)

    # The user's code, whole and read-only (typing changes nothing).
    editor = page.get_by_test_id("editor")
    lines = editor.locator(".cm-line").all_inner_texts()
    assert "\n".join(line.rstrip("\n") for line in lines).strip() == SNIPPET.strip()
    editor.locator(".cm-content").click()
    page.keyboard.type("xyz")
    assert "xyz" not in editor.inner_text()

    # The stepper walks the recorded events: every event of the run is there.
    recorded = json.loads(
        page.locator(f"#{RECORDING_ID}").text_content() or "{}"
    )  # the embedded JSON reads back whole
    n = len(recorded["events"])
    assert recorded["code"] == SNIPPET
    position = page.get_by_test_id("stepper-position")
    expect(position).to_contain_text(f"event {n} of {n}")
    page.get_by_test_id("stepper-first").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_started")
    expect(position).to_contain_text(f"event 1 of {n}")
    # Stepping through the eqns records them one by one (the eqn count grows with the cursor).
    types = [e["type"] for e in recorded["events"]]
    second_eqn = [i for i, t in enumerate(types) if t == "eqn_recorded"][1]
    for _ in range(second_eqn):
        page.get_by_test_id("stepper-next").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("eqn_recorded")
    expect(position).to_contain_text(f"event {second_eqn + 1} of {n}")
    page.screenshot(path=str(screenshots / "standalone-stepping.png"))
    page.get_by_test_id("stepper-last").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    # Clicking an eqn lights up its line in the code, as in the explorer.
    page.get_by_test_id("eqn-3").click()
    expect(editor.locator(".cm-line.cm-js-selected")).to_have_text("    w = z + y")
    page.screenshot(path=str(screenshots / "standalone-tracing.png"))

    # How to run it again (design 0084): the project's own pins (pyproject.toml, read here with
    # tomllib; the JAX this process imports is the same), and a command that does rerun it.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [d for d in project["dependencies"] if d.startswith(("jax==", "jaxlib=="))]
    expect(page.get_by_test_id("reproduce-pin")).to_have_text(pins)
    assert f"jax=={jax.__version__}" in pins
    expect(page.get_by_test_id("reproduce")).to_contain_text(
        f"jaxscope-{project['version']}-py3-none-any.whl"
    )
    # make serve leaves jaxscope in .venv/bin/, not on PATH: the hint says so (a new user's
    # 'jaxscope: command not found').
    expect(page.get_by_test_id("reproduce")).to_contain_text("source .venv/bin/activate")
    command = page.get_by_test_id("reproduce-command").inner_text().strip()
    assert command == "jaxscope run tracing snippet.py --html run.html"
    out.unlink()
    again = subprocess.run(
        [str(JAXSCOPE), *command.split()[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "run.html").is_file()

    # Nothing but the file itself was asked for: no server, no network.
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    assert errors == []


def test_the_download_button_saves_the_run_with_its_details_as_the_same_file(
    page: Page,
    tmp_path: Path,
    offline_page: tuple[Page, list[str], list[str]],
    screenshots: Path,
) -> None:
    """The served page's Download: a transpose run streams its steps as summaries (details on
    demand); the saved file holds every step whole and replays the run from disk."""
    open_exhibit(page, "transpose")
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    with page.expect_download() as info:
        page.get_by_test_id("download-html").click()
    saved = tmp_path / info.value.suggested_filename
    info.value.save_as(saved)
    assert re.fullmatch(r"jaxscope-transpose-\d{8}-\d{6}\.html", saved.name)
    expect(page.get_by_test_id("download-note")).to_contain_text("opens from disk")
    page.screenshot(path=str(screenshots / "standalone-download-button.png"))

    payload = recording_in(saved.read_text("utf-8"))
    events = payload["events"]
    # Every summary was replaced by its whole event before the file was written: no summary,
    # no value left in the worker ("deferred"), no answer marker the replay would misread.
    assert [e["seq"] for e in events if "detail_id" in e or "detail_of" in e] == []
    assert '"deferred":true' not in json.dumps(events, separators=(",", ":"))
    assert len([e for e in events if e["type"] == "transpose_stepped"]) > 2
    assert payload["exhibit"] == "transpose"
    assert payload["code"].strip() == editor_text(page).strip()

    replay, requests, errors = offline_page
    replay.goto(saved.as_uri())
    expect(replay.get_by_test_id("recorded-banner")).to_contain_text(f"jax {jax.__version__}")
    expect(replay.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    # The replay's view shows what the live page showed at the same event.
    assert (
        replay.get_by_test_id("exhibit-view").inner_text()
        == page.get_by_test_id("exhibit-view").inner_text()
    )
    replay.screenshot(path=str(screenshots / "standalone-transpose.png"))
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    assert errors == []


def test_a_replayed_recording_locks_its_rerun_controls_and_still_steps(
    tmp_path: Path, offline_page: tuple[Page, list[str], list[str]], screenshots: Path
) -> None:
    """A recording cannot run again: the caches view's preset menu is disabled, with the reason
    as its title, and keeps the run's preset; the stepper and the timeline still work."""
    source = (ROOT / "exhibits" / "caches" / "examples" / "new_shape.py").read_text("utf-8")
    out = write_html(tmp_path, source, exhibit="caches")
    page, requests, errors = offline_page
    page.goto(out.as_uri())
    expect(page.get_by_test_id("exhibit-title")).to_have_text("Cache layers")
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")

    preset = page.get_by_test_id("caches-preset")
    expect(preset).to_be_disabled()
    expect(preset).to_have_attribute("title", RERUN_LOCKED)
    expect(preset).to_have_value("")  # the snippet's own calls, as recorded

    # The stepper walks the recorded events; the menu stays locked at every step.
    position = page.get_by_test_id("stepper-position")
    page.get_by_test_id("stepper-first").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_started")
    expect(position).to_contain_text("event 1 of")
    page.get_by_test_id("stepper-next").click()
    expect(position).to_contain_text("event 2 of")
    expect(preset).to_be_disabled()
    page.get_by_test_id("stepper-last").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    # Picking a call of the timeline only changes the view: it still works.
    page.get_by_test_id("caches-call-0").click()
    expect(page.locator("#caches-call")).to_contain_text("Call 1")
    expect(page.get_by_test_id("caches-layer")).to_have_text("no cache: XLA compiled")
    expect(page.get_by_test_id("rerun-note")).to_have_count(0)
    page.screenshot(path=str(screenshots / "standalone-caches-locked.png"))

    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    assert errors == []


def recording_in(html: str) -> dict[str, Any]:
    """The recording a standalone file carries (its JSON script element)."""
    start = html.index(f'id="{RECORDING_ID}">') + len(f'id="{RECORDING_ID}">')
    value: dict[str, Any] = json.loads(html[start : html.index("</script>", start)])
    return value


def test_the_shown_command_with_options_reruns_through_a_shell(
    tmp_path: Path, offline_page: tuple[Page, list[str], list[str]]
) -> None:
    """Options that need a shell's quoting, and one that starts with '-' (argparse takes a
    separate '-(1)' for a flag): the command, pasted into bash, reruns the run with them."""
    source = (ROOT / "exhibits" / "vmap" / "examples" / "per_example_loss.py").read_text()
    out = write_html(
        tmp_path, source, "--in-axes", "(None, 0, 0)", "--out-axes=-(1)", exhibit="vmap"
    )
    page, _, errors = offline_page
    page.goto(out.as_uri())
    command = page.get_by_test_id("reproduce-command").inner_text().strip()
    assert command == (
        "jaxscope run vmap snippet.py --in-axes '(None, 0, 0)' --out-axes='-(1)' --html run.html"
    )
    out.unlink()
    again = subprocess.run(
        ["bash", "-c", command],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{JAXSCOPE.parent}:/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "run.html").is_file()
    assert errors == []
