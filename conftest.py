"""Repository-wide pytest setup, loaded before any test module imports JAX.

In-process tests see the same 8 virtual CPU devices as the sandboxed workers
(``jaxscope.sandbox.worker`` adds the flag to every worker's environment), so the sharding and
shard_map exhibits' probes can run in-process. The flag only takes effect if it is set before
JAX's CPU backend starts, which is why it lives here and not in a test directory's conftest.
"""

from __future__ import annotations

import os

import pytest

_FLAG = "--xla_force_host_platform_device_count=8"
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "full: runs only under `make test-all` (JAXSCOPE_TEST_ALL=1): full-size programs and "
        "whole matrices whose sample runs in `make test` (testkit.py, design 0058)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from testkit import whole_matrices

    if whole_matrices():
        return
    skip = pytest.mark.skip(reason="full: runs under `make test-all` (JAXSCOPE_TEST_ALL=1)")
    for item in items:
        if item.get_closest_marker("full") is not None:
            item.add_marker(skip)
