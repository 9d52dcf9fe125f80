"""Repository-wide pytest setup, loaded before any test module imports JAX.

In-process tests see the same 8 virtual CPU devices as the sandboxed workers
(``jaxscope.sandbox.worker`` adds the flag to every worker's environment), so the sharding and
shard_map exhibits' probes can run in-process. The flag only takes effect if it is set before
JAX's CPU backend starts, which is why it lives here and not in a test directory's conftest.

The JAX worker template's tracing of the shipped examples between requests (design 0076) is off
for the suite (``JAXSCOPE_TEMPLATE_WARM=0``, inherited by the servers and CLIs tests start): the
suite starts many short-lived templates, each of which would spend ~1-2 CPU-s on it beside the
tests. ``backend/tests/test_template_warm.py`` turns it on and holds it to its promises.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JAXSCOPE_TEMPLATE_WARM", "0")

_FLAG = "--xla_force_host_platform_device_count=8"
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()


def pytest_configure(config: pytest.Config) -> None:
    if config.getvalue("dist") == "loadgroup" and not hasattr(config, "workerinput"):
        # the controller, before its test processes start (they inherit it): where they write
        # their tests' groups (pytest_collection_finish below)
        os.environ[_GROUPS_ENV] = tempfile.mkdtemp(prefix="jaxscope-xdist-groups-")
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


# --- test groups under pytest-xdist (design 0058) ---------------------------------------------
# pytest-xdist's ``--dist loadgroup`` renames a grouped test's ``item._nodeid``, which pytest 9.2
# no longer reads (``Node.nodeid`` is ``str(self._id)``): every ``xdist_group`` was ignored and
# each test went to whichever process was free. Here each test process writes the group of every
# test it collected to a file, and the controller's scheduler reads it.
_GROUPS_ENV = "JAXSCOPE_XDIST_GROUPS"


def _group_of(item: pytest.Item) -> str | None:
    """The test's ``xdist_group`` name; else its module's path when it uses a module- or
    class-scoped fixture of its own module (a torch truth process, a captured run: made once,
    not once per test process; ~2.4 worker-minutes of the suite were such fixtures made twice);
    else None (the test goes alone to whichever process is free)."""
    names = sorted(
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    )
    if names:
        return "_".join(names)
    info = getattr(item, "_fixtureinfo", None)
    module = item.nodeid.split("::", 1)[0]
    for defs in info.name2fixturedefs.values() if info is not None else ():
        if any(d.scope in ("module", "class") and d.baseid == module for d in defs):
            return module
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = os.environ.get(_GROUPS_ENV)
    if folder and not hasattr(config, "workerinput"):
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    folder = os.environ.get(_GROUPS_ENV)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not folder or not worker:
        return
    groups = {item.nodeid: group for item in session.items if (group := _group_of(item))}
    path = Path(folder) / f"{worker}.json"
    path.with_suffix(".tmp").write_text(json.dumps(groups))
    path.with_suffix(".tmp").replace(path)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    folder = Path(os.environ[_GROUPS_ENV])

    class ByGroup(LoadScopeScheduling):  # type: ignore[misc]
        """``loadgroup`` as pytest-xdist means it: a group's tests in one process, one after
        another; the other tests each alone."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                files = sorted(folder.glob("*.json"))
                self._groups = json.loads(files[0].read_text()) if files else {}
            return self._groups.get(nodeid, nodeid)

    return ByGroup(config, log)
