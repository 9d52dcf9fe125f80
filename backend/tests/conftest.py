"""Shared fixtures of the backend tests (helpers live in :mod:`tests.harness`). No Playwright
here: the e2e tests have their own conftest."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jaxscope.settings import Limits

from tests.harness import SandboxHarness


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxHarness]:
    harness = SandboxHarness(Limits(wall_s=10.0, cpu_s=10.0), size=2)
    yield harness
    harness.close()
