"""Before any run, a torch exhibit's page says that this server lacks the PyTorch/XLA track and
how to add it (issue 31, item 1; design 0057): the catalogue's ``unavailable``, which the page
did not show (it said "Invalid request" only after Run). A server of its own, the torch venv
pointed nowhere; the JAX exhibits say nothing of the kind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from jaxscope.local_server import serving
from playwright.sync_api import Page, expect

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def no_torch_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = dict(os.environ)
    env["JAXSCOPE_TORCH_PYTHON"] = str(tmp_path_factory.mktemp("t") / "nowhere" / "bin" / "python")
    with serving(cwd=ROOT, env=env) as server:
        yield server.url


def test_a_torch_exhibit_says_it_is_not_installed_before_run(
    page: Page, no_torch_url: str, console_errors: list[str]
) -> None:
    page.goto(no_torch_url + "/")
    page.get_by_test_id("exhibit-tracing").click()
    expect(page.get_by_test_id("exhibit-unavailable")).to_have_count(0)
    page.get_by_test_id("exhibit-lazy_tensor").click()
    notice = page.get_by_test_id("exhibit-unavailable")
    expect(notice).to_contain_text("not installed here")
    expect(notice).to_contain_text("nowhere")
    expect(notice).to_contain_text("make torch")  # a checkout: the Makefile's target
