"""The stations target as a first user met it (design 0067, "Saying 'not run' everywhere"):
"TPU v5e (compile only)" stays chosen when another example is picked, and the run then says it
was not run in the Run station and in the header, beside the worker's CPU. One TPU compile run
(skipped where libtpu is not installed: make tpu; TPU=no)."""

from __future__ import annotations

import pytest
from jaxscope.sandbox import kinds
from playwright.sync_api import Page, expect

from e2e.browser import open_exhibit, run_and_wait

pytestmark = pytest.mark.skipif(
    kinds.kind_problem("tpu_compile") is not None, reason="libtpu not installed (make tpu)"
)


def test_picked_example_keeps_the_tpu_target_and_says_not_run(page: Page) -> None:
    open_exhibit(page, "stations")
    page.get_by_test_id("target-tpu-v5e").check()  # reruns the default example: not needed here
    page.get_by_test_id("cancel").click()
    page.get_by_test_id("example-select").select_option("attention")
    expect(page.get_by_test_id("target-tpu-v5e")).to_be_checked()
    run_and_wait(page)
    expect(page.get_by_test_id("stepper-event-type")).to_have_text("run_finished")
    expect(page.get_by_test_id("station-step-run")).to_contain_text(
        "not run: compile only for TPU v5e"
    )
    expect(page.get_by_test_id("station-step-run")).to_have_attribute("data-status", "not_run")
    expect(page.get_by_test_id("compiled-for")).to_have_text(
        "compiled for TPU v5e (v5e:2x2 topology, offline)"
    )
    expect(page.get_by_test_id("run-info")).to_contain_text("cpu")
