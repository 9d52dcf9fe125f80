"""The caches exhibit's compile counts equal a fresh process's for every kind of callable
``jax.jit`` wraps (issue 33, classes 1 and 9): functions, bound methods of two instances (called
through a jit object, or kept on the instance), ``functools.partial`` objects, callable objects
(JAX names them ``<unnamed function>``), NNX modules (``jax.jit(model)`` and ``nnx.jit`` of a
function taking modules), and the NNX train loops of ``cases/NJ*`` (``nnx.jit`` objects made
when the snippet loads, reached through their ``jitted_fn``).

Truth: ``jax_log_compiles`` of the snippet run as a plain script in a fresh process, counted
for every name the snippet's code defines (plus ``<unnamed function>``), not only the names the
exhibit saw: a jit the exhibit cannot reach still counts against it. The exhibit's count is the
timeline's traced/compiled calls plus the driver summary's work outside them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from jaxscope.internals.jit_watch import snippet_function_names

import testkit
from exhibits.caches.artefacts import ARTEFACTS
from exhibits.conftest import CASES, PLAIN_LOG_GROUP, plain_jax_log, run_probe

# one test process with the other modules reading the same fresh-process logs (conftest)
pytestmark = pytest.mark.xdist_group(PLAIN_LOG_GROUP)

KINDS = Path(__file__).resolve().parent / "callable_kinds"
# `make test` runs the NJ01 pair (the class-1 cause) and a sample of the rest; `make test-all`
# every kind (testkit, design 0058).
NJ01 = [
    CASES / "NJ01_nnx_optimizer_rebuilt_broken.py",
    CASES / "NJ01_nnx_optimizer_rebuilt_fixed.py",
]
PATHS = NJ01 + testkit.sample(
    [*sorted(KINDS.glob("*.py")), CASES / "NJ02_nnx_new_instances.py"], 4, key="callable_kinds"
)
UNNAMED = "<unnamed function>"


def _plain(path: Path, names: set[str]) -> tuple[Counter[str], Counter[str]]:
    log = plain_jax_log(path)
    traces = Counter(m for m in re.findall(r"Finished tracing (.+?) for jit", log) if m in names)
    compiles = Counter(
        m for m in re.findall(r"Finished XLA compilation of jit\((.+?)\) in", log) if m in names
    )
    return traces, compiles


def _exhibit(events: list[Any]) -> tuple[Counter[str], Counter[str], list[Any]]:
    calls = [e for e in events if e.type == "jit_call_observed"]
    traces = Counter(c.function for c in calls if c.traced)
    compiles = Counter(c.function for c in calls if c.compiled)
    for e in events:
        if e.type == "driver_run_summary":
            for w in e.outside:
                traces[w.function] += w.traces
                compiles[w.function] += w.compiles
    return +traces, +compiles, calls


@pytest.fixture(scope="module", params=PATHS, ids=lambda p: p.stem)
def counted(request: pytest.FixtureRequest) -> dict[str, Any]:
    path: Path = request.param
    source = path.read_text()
    names = snippet_function_names(source) | {UNNAMED}
    events = run_probe("caches", source).events
    traces, compiles, calls = _exhibit(events)
    plain_traces, plain_compiles = _plain(path, names)
    summary = next(e for e in events if e.type == "driver_run_summary")
    return {
        "path": path,
        "traces": traces,
        "compiles": compiles,
        "calls": calls,
        "plain_traces": plain_traces,
        "plain_compiles": plain_compiles,
        "summary": summary,
        "events": events,
    }


def test_counts_equal_a_fresh_process(counted: dict[str, Any]) -> None:
    assert counted["plain_compiles"], "the plain run compiled none of the snippet's functions"
    assert counted["compiles"] == counted["plain_compiles"]
    assert counted["traces"] == counted["plain_traces"]


def test_every_jit_call_is_on_the_timeline(counted: dict[str, Any]) -> None:
    # Every kind is reached: nothing JAX compiled happened outside the calls shown.
    assert counted["calls"]
    assert counted["summary"].outside == []
    assert counted["summary"].note is None


def test_nnx_optimizer_rebuilt_named_down_to_the_optax_transformation(
    counted: dict[str, Any],
) -> None:
    stem = counted["path"].stem
    if not stem.startswith("NJ01"):
        pytest.skip("the NJ01 pair only")
    calls = counted["calls"]
    source = counted["path"].read_text().splitlines()
    call_line = next(i for i, t in enumerate(source, 1) if "losses.append(train_step(" in t)
    assert all(c.source.line == call_line for c in calls)
    if stem.endswith("_fixed"):
        assert [c.compiled for c in calls] == [True, False]
        assert calls[1].cause is None
        return
    assert [c.compiled for c in calls] == [True, True]
    cause = calls[1].cause
    # JAX's own explanation (the path and its words), then the object that is not equal.
    assert "at input path optimizer._graphdef, the pytree node metadata does not match" in cause
    assert "attribute 'tx'" in cause
    assert "GradientTransformationExtraArgs (from optax)" in cause
    assert "not equal to the cached one although it prints the same" in cause
    assert "Fix: build the optax transformation once, outside the loop" in cause
    # JAX's explain_cache_misses text, as the call recorded it, says the same path.
    assert "._graphdef" in calls[1].explanation
    # `--print timeline` carries the cause, not only the entry that differs (issue 33 audit)
    timeline = json.loads(ARTEFACTS["timeline"](counted["events"]) or "")
    assert [t["cause"] for t in timeline] == [c.cause for c in calls]
    assert timeline[1]["differs"] == ["input pytree"]
