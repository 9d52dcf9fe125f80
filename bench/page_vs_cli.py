"""Benchmark: does the page keep up with the worker? Page time to the terminal event / CLI time.

For each real program (``examples/real/*.py``) and each exhibit named in issue 14, two times are
measured in the same run on this machine:

- **CLI**: wall seconds of ``jaxscope run EXHIBIT FILE`` (worker start included);
- **page**: wall seconds in headless Chromium (Debian's ``/usr/bin/chromium``) from the click on
  Run to the stepper showing the run's terminal event (``run_finished`` or ``run_failed``), against
  a ``jaxscope serve`` started by this script (worker start included, the same as the CLI's).

The ratio page/CLI is the figure; the goal is ≤ 1.2 everywhere. Both sides run the same sandboxed
worker, so a ratio above 1 is time the page (or the server's forwarding) adds. A run that fails on
either side is reported with its terminal type, not dropped.

Usage: ``.venv/bin/python bench/page_vs_cli.py [--programs a.py ...] [--exhibits tracing ...]
[--timeout S] [--json OUT] [--no-cli]``. The page's row also has the bytes of the websocket
frames it received from Run to the terminal event (``page_bytes``, ``largest_frame``,
``frames``). Prints one JSON object per pair and a summary object at the end.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from jaxscope.local_server import serving  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from e2e.browser import open_exhibit, set_code  # noqa: E402
from e2e.conftest import CHROMIUM_ARGS  # noqa: E402

EXHIBITS = [
    "tracing",
    "stations",
    "jvp",
    "partial_eval",
    "transpose",
    "nan_finder",
    "vmap",
    "transform_order",
    "caches",
    "pytree",
]
PROGRAMS = sorted((ROOT / "examples" / "real").glob("*.py"))
JAXSCOPE = ROOT / ".venv" / "bin" / "jaxscope"


def cli_time(exhibit: str, program: Path, timeout_s: float) -> dict[str, Any]:
    """Wall seconds of the CLI run and how it ended (its exit code)."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [str(JAXSCOPE), "run", exhibit, str(program)],
            capture_output=True,
            text=True,
            timeout=timeout_s + 30,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"cli_s": None, "cli_exit": "bench-timeout"}
    seconds = time.perf_counter() - t0
    return {"cli_s": round(seconds, 2), "cli_exit": proc.returncode}


class FrameBytes:
    """Bytes of the websocket text frames the page received (what the server streamed to it):
    in all, the largest frame, and how many."""

    def __init__(self, page: Any) -> None:
        self.total = 0
        self.largest = 0
        self.frames = 0
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload: str | bytes) -> None:
        size = len(payload.encode() if isinstance(payload, str) else payload)
        self.total += size
        self.largest = max(self.largest, size)
        self.frames += 1

    def reset(self) -> None:
        self.total = self.largest = self.frames = 0


def page_time(
    page: Any, exhibit: str, program: Path, timeout_s: float, frames: FrameBytes | None = None
) -> dict[str, Any]:
    """Wall seconds from Run to the terminal event shown by the stepper, and which one it was;
    with ``frames``, the bytes streamed to the page from Run to then (``page_bytes``) and the
    largest frame (``largest_frame``)."""
    open_exhibit(page, exhibit)
    set_code(page, program.read_text())
    if frames is not None:
        frames.reset()
    t0 = time.perf_counter()
    page.get_by_test_id("run").click()
    shown = page.get_by_test_id("stepper-event-type")
    try:
        expect(shown).to_have_text(re.compile(r"run_finished|run_failed"), timeout=timeout_s * 1000)
    except AssertionError:
        return {"page_s": None, "page_end": "bench-timeout"}
    seconds = time.perf_counter() - t0
    row: dict[str, Any] = {"page_s": round(seconds, 2), "page_end": shown.inner_text()}
    if frames is not None:
        row.update(page_bytes=frames.total, largest_frame=frames.largest, frames=frames.frames)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--programs", nargs="*", type=Path, default=PROGRAMS)
    parser.add_argument("--exhibits", nargs="*", default=EXHIBITS)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--no-cli", action="store_true", help="time the page only")
    ns = parser.parse_args()
    rows: list[dict[str, Any]] = []
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    with serving(cwd=ROOT) as server, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        page = browser.new_page(base_url=server.url, viewport={"width": 1400, "height": 900})
        frames = FrameBytes(page)
        for program in ns.programs:
            for exhibit in ns.exhibits:
                row: dict[str, Any] = {"program": program.name, "exhibit": exhibit}
                if not ns.no_cli:
                    row.update(cli_time(exhibit, program, ns.timeout))
                row.update(page_time(page, exhibit, program, ns.timeout, frames))
                if row.get("cli_s") and row["page_s"]:
                    row["ratio"] = round(row["page_s"] / row["cli_s"], 2)
                print(json.dumps(row), flush=True)
                rows.append(row)
        browser.close()
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    summary = {
        "pairs": len(rows),
        "measured": len(ratios),
        "max_ratio": max(ratios, default=None),
        "median_ratio": sorted(ratios)[len(ratios) // 2] if ratios else None,
        "goal": 1.2,
    }
    print(json.dumps(summary))
    if ns.json is not None:
        ns.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
