"""The pallas exhibit's Mosaic lowering (option target "tpu-v5e", design 0073) in real Chromium,
from a recorded stream (``exhibits/pallas/golden_tpu/matmul_tiled.events.jsonl``: ``jaxscope run
pallas recordings/tpu-v5e/pallas_chip/matmul_tiled.py --target tpu-v5e --json``; CI has no
libtpu): the operands' blocks and memory spaces, the ops linked to the kernel jaxpr's eqns and
the user's line, the module text's marked line. Screenshot in the light theme."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait, set_code, set_theme
from e2e.replay import replay_runs

ROOT = Path(__file__).resolve().parents[1]
STREAM = ROOT / "exhibits" / "pallas" / "golden_tpu" / "matmul_tiled.events.jsonl"
SNIPPET = ROOT / "recordings" / "tpu-v5e" / "pallas_chip" / "matmul_tiled.py"


def test_pallas_mosaic_lowering(page: Page, console_errors: list[str], screenshots: Path) -> None:
    events = [json.loads(line) for line in STREAM.read_text().splitlines() if line.strip()]
    (low,) = [e for e in events if e["type"] == "pallas_mosaic_lowered"]
    answered = replay_runs(page, "pallas", STREAM.stem, events=events)
    page.set_viewport_size({"width": 1500, "height": 1400})
    open_exhibit(page, "pallas")
    set_theme(page, "light")
    set_code(page, SNIPPET.read_text())
    run_and_wait(page)
    assert answered
    expect(page.get_by_test_id("pallas-target")).to_be_visible()
    mosaic = page.get_by_test_id("pallas-mosaic")
    expect(mosaic.get_by_test_id("mosaic-summary")).to_have_text(
        "matmul_kernel: grid (2, 3), arbitrary, arbitrary"
    )
    expect(mosaic.get_by_test_id("mosaic-block")).to_have_text(
        ["(128, 512)", "(512, 128)", "(128, 128)"]
    )
    expect(mosaic.get_by_test_id("mosaic-space")).to_have_text(["vmem"] * 3)
    ops = mosaic.get_by_test_id("mosaic-op")
    expect(ops).to_have_count(len(low["ops"]))
    matmul = [o["name"] for o in low["ops"]].index("tpu.matmul")
    ops.nth(matmul).get_by_test_id("mosaic-op-pick").click()
    expect(ops.nth(matmul)).to_have_class(re.compile("ui-hit"))
    expect(mosaic.get_by_test_id("mosaic-marked")).to_contain_text("tpu.matmul")
    # its eqn (dot_general, eqn 2) marked in the kernel jaxpr, its line in the editor
    expect(page.get_by_test_id("kernel-eqn-2")).to_have_class(re.compile("hl|highlight|ui-hit"))
    mosaic.scroll_into_view_if_needed()
    page.screenshot(path=str(screenshots / "pallas-mosaic-light.png"), full_page=True)
    assert console_errors == []
