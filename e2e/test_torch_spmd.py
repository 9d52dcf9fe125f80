"""The torch_spmd exhibit (PyTorch/XLA track) in real Chromium: the default example runs in a
torch worker on 8 virtual CPU devices; the page shows the 2 x 4 mesh, x's tile assignment (the
mesh as it is) and w's (the mesh transposed, PARTIAL), the all-reduce over each mesh row, and the
output allclose to CPU torch. Clicking device 5 marks its 2 x 2 block of x. The transposed_2x2
example runs on 4 devices. Screenshots in the light and dark themes. Skipped where the torch venv
is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from jaxscope.sandbox.kinds import kind_problem
from playwright.sync_api import Page, expect

from e2e.browser import in_both_themes, open_exhibit, set_theme, shoot_both_themes

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# A fresh torch worker imports torch and torch_xla (5-15 s on a loaded 2-core box) before f runs.
TORCH_RUN_TIMEOUT_MS = 120_000


def run(page: Page) -> None:
    page.get_by_test_id("run").click()
    expect(page.get_by_test_id("stepper-event-type")).to_have_text(
        "run_finished", timeout=TORCH_RUN_TIMEOUT_MS
    )


def test_torch_spmd_mesh_tiles_collectives_and_shards(
    page: Page, console_errors: list[str], screenshots: Path
) -> None:
    page.set_viewport_size({"width": 1500, "height": 1300})
    open_exhibit(page, "torch_spmd")
    set_theme(page, "light")
    run(page)
    grid = page.get_by_test_id("spmd-mesh-grid")
    expect(grid.locator("tbody tr")).to_have_count(2)
    expect(grid.locator("tbody tr").nth(1)).to_contain_text("4567")
    args = page.get_by_test_id("spmd-arg")
    expect(args).to_have_count(2)
    expect(args.nth(0).get_by_test_id("spmd-spec")).to_have_text("('data', 'model')")
    expect(args.nth(1).get_by_test_id("spmd-sharding")).to_have_text(
        "{devices=[4,1,2]0,4,1,5,2,6,3,7 last_tile_dim_replicate}"
    )
    expect(args.nth(1).get_by_test_id("spmd-tiles").locator("tbody tr")).to_have_count(4)
    collectives = page.get_by_test_id("spmd-collectives")
    expect(collectives.first).to_contain_text("all-reduce")
    expect(collectives.first).to_contain_text("{{0,1,2,3},{4,5,6,7}}")
    expect(collectives.nth(1)).to_contain_text("all-gather")
    expect(page.get_by_test_id("spmd-compare")).to_contain_text("allclose to eager CPU torch")

    # Device 5 holds x[2:4, 2:4] = 18 19 / 26 27: click it, its cells are marked.
    page.get_by_test_id("spmd-mesh-device").nth(5).click()
    marked = args.nth(0).get_by_test_id("spmd-arg-tensor").locator("td.ui-hit")
    expect(marked).to_have_text(["18.0", "19.0", "26.0", "27.0"])

    def shoot(theme: str) -> None:
        page.screenshot(path=str(screenshots / f"torch_spmd-matmul-{theme}.png"), full_page=True)
        page.get_by_test_id("spmd-program").first.screenshot(
            path=str(screenshots / f"torch_spmd-program-{theme}.png")
        )
        page.get_by_test_id("spmd-output").screenshot(
            path=str(screenshots / f"torch_spmd-output-{theme}.png")
        )

    in_both_themes(page, shoot)

    page.get_by_test_id("example-select").select_option("transposed_2x2")
    run(page)
    expect(page.get_by_test_id("spmd-mesh")).to_contain_text("4 devices")
    # Device 5 is gone: the first device of the mesh (3) is picked, its block x[0:2, 0:2] marked.
    expect(page.get_by_test_id("spmd-arg-tensor").locator("td.ui-hit")).to_have_text(
        ["0.0", "1.0", "4.0", "5.0"]
    )
    expect(page.get_by_test_id("spmd-tiles").locator("tbody tr").nth(0)).to_have_text("030")
    shoot_both_themes(page, screenshots, "torch_spmd-transposed", full_page=True)
    assert console_errors == []
