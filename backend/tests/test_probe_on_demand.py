"""A worker imports only the exhibit it runs (issue 36, design 0059): a bubblewrap-started worker
imports no probe at start, and a run imports its exhibit's probe (and the modules that probe
imports), never another exhibit's probe nor the event union (every exhibit's ``events.py``);
of other exhibits only the options models and the events that allowlisted internals walkers
still build.
A worker forked from the warm template, once the template's idle work is done, finds every JAX
probe already imported by it (``zygote._idle_tasks``: shared pages, no import per run; before
that, a fork finds the first exhibit's probe, design 0076), which the forked case checks.

The snippet itself reports what its worker has imported: it runs in the worker, after the
probe's import and before the probe runs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from jaxscope.protocol import RunFinished, StdoutPrinted
from jaxscope.sandbox.env import worker_env
from jaxscope.sandbox.forked import ENV_SWITCH, template_for, zygote_problem
from jaxscope.settings import Limits

from exhibits.registry import EXHIBITS
from tests.harness import SandboxHarness, assert_one_terminal

# Prints the exhibit modules its worker holds (a probe or any other part), and whether the
# event union was assembled there; then the tracing exhibit runs its f as usual.
REPORT = """
import json, sys
print(json.dumps({
    "exhibit_modules": sorted(
        m for m in sys.modules if m.startswith("exhibits.") and m.count(".") >= 2
    ),
    "union": "jaxscope.events" in sys.modules,
}))

def f(x):
    return x * 2.0

args = (1.0,)
"""


def _report(harness: SandboxHarness, exhibit: str) -> dict[str, object]:
    events = harness.run(REPORT, exhibit=exhibit)
    terminal = assert_one_terminal(events)
    assert isinstance(terminal, RunFinished), terminal
    printed = "".join(e.text for e in events if isinstance(e, StdoutPrinted))
    report: dict[str, object] = json.loads(printed)
    return report


def test_a_forked_worker_finds_every_jax_probe_imported_by_its_template() -> None:
    limits = Limits(wall_s=10.0, cpu_s=10.0)
    problem = zygote_problem("jax", limits)
    if problem is not None:
        pytest.skip(f"workers are not forked here: {problem}")
    # The template says ready after the first exhibit's probe and imports the others between
    # requests: the worker is forked once that is done (a pool without spares forks it for the
    # run; a spare forked before would not have them).
    idle = template_for(worker_env(kind="jax")).wait_idle(120)
    assert idle is not None, "the template's idle work did not end within 120 s"
    harness = SandboxHarness(limits, size=0)
    try:
        report = _report(harness, "tracing")
    finally:
        harness.close()
    modules = report["exhibit_modules"]
    assert isinstance(modules, list)
    jax_probes = {f"exhibits.{e.id}.probe" for e in EXHIBITS.values() if e.worker == "jax"}
    assert jax_probes <= set(modules)
    assert not any(
        m in modules for m in (f"exhibits.{e}.probe" for e in EXHIBITS) if m not in jax_probes
    )


@pytest.fixture
def bwrap_started() -> Iterator[SandboxHarness]:
    """A pool whose workers bubblewrap starts one by one (the warm template switched off)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_SWITCH, "0")
        harness = SandboxHarness(Limits(wall_s=20.0, cpu_s=20.0), size=0)
        try:
            yield harness
        finally:
            harness.close()


def test_a_started_worker_imports_only_the_probe_of_its_exhibit(
    bwrap_started: SandboxHarness,
) -> None:
    report = _report(bwrap_started, "tracing")
    modules = report["exhibit_modules"]
    assert isinstance(modules, list)
    # Its own probe and what that probe imports of its folder (and the options modules the
    # protocol composes RunOptions of): no other exhibit's probe.
    probes = [m for m in modules if m.endswith(".probe")]
    assert probes == ["exhibits.tracing.probe"]
    # Of other exhibits, only the options models RunOptions is composed of (no internals
    # module imports an exhibit's events: the walkers return records, issue 36).
    others = {m for m in modules if m.split(".")[1] != "tracing" and not m.endswith(".options")}
    assert not others, modules
    assert report["union"] is False
