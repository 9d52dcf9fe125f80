"""Measuring must not change what is measured (issue 15): the caches exhibit's count of the
traces and compiles each jitted function makes equals what JAX itself logs for the same snippet
run as a plain script in a fresh Python process (the driver ``f(*args)``, or ``jax.jit(f)`` on
each of ``calls``) (``jax_log_compiles``: "Finished tracing <name>
for jit" per trace, "Finished XLA compilation of jit(<name>)" per compile). So neither the
worker's own references nor its earlier runs turn a miss into a hit, or a hit into a miss.
Cases: every example of the exhibit, the shared C05 pair, and the driver cases of a review
(``driver_cases/``): a jitted method (``@partial(jax.jit, static_argnums=0)``), jits kept in a
dict, a tuple, a closure and an instance, ``jax.vmap``/``jax.grad`` of a jitted function called
eagerly (JAX compiles variants of ``jit(g)`` no call of the jit object accounts for: the
``driver_run_summary`` counts them, and the exhibit's total is the timeline's plus those), and a
jit out of the watcher's reach (no call observed; the summary still counts JAX's work).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from exhibits.conftest import CASES, PLAIN_LOG_GROUP, jaxscope_run, plain_jax_log
from testkit import sample

# one test process with the other modules reading the same fresh-process logs (conftest)
pytestmark = pytest.mark.xdist_group(PLAIN_LOG_GROUP)

EXAMPLES = Path(__file__).resolve().parent / "examples"
DRIVER_CASES = Path(__file__).resolve().parent / "driver_cases"


def plain_counts(path: Path, names: set[str]) -> tuple[Counter[str], Counter[str]]:
    """``(traces, compiles)`` per jitted function name in a fresh ``python`` running f(*args)."""
    log = plain_jax_log(path)
    traces = Counter(m for m in re.findall(r"Finished tracing (\S+) for jit", log) if m in names)
    compiles = Counter(
        m for m in re.findall(r"Finished XLA compilation of jit\((\S+)\)", log) if m in names
    )
    return traces, compiles


def exhibit_counts(path: Path) -> tuple[Counter[str], Counter[str]]:
    """``(traces, compiles)`` per function as the caches exhibit counted them (``--json``): the
    timeline's calls that traced/compiled, plus a driver run's work outside them
    (``driver_run_summary.outside``)."""
    proc = jaxscope_run("caches", path, "--json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    calls = [c for c in events if c.get("type") == "jit_call_observed"]
    outside = [w for e in events if e.get("type") == "driver_run_summary" for w in e["outside"]]
    assert calls or outside, "no jit call observed, no work of JAX counted"
    traces = Counter(c["function"] for c in calls if c["traced"])
    compiles = Counter(c["function"] for c in calls if c["compiled"])
    for w in outside:
        traces[w["function"]] += w["traces"]
        compiles[w["function"]] += w["compiles"]
    return +traces, +compiles


PATHS = [
    *sorted(EXAMPLES.glob("*.py")),
    CASES / "C05_jit_in_loop_broken.py",
    CASES / "C05_jit_in_loop_fixed.py",
    # eager_only jits nothing: its note is tested in test_caches.py
    *sorted(p for p in DRIVER_CASES.glob("*.py") if p.stem != "eager_only"),
]
# `make test` checks the C05 pair, every driver case (each its own way of holding or calling a
# jit) and a fixed, seeded sample of 3 of the exhibit's 12 examples (a fresh process each,
# ~1.2 s a case); `make test-all` every example (testkit.py, design 0076).
_SAMPLED = [p for p in PATHS if p.parent != EXAMPLES] + sample(
    sorted(EXAMPLES.glob("*.py")), 3, key="test_traces_and_compiles_equal_a_fresh_process"
)


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=p.stem, marks=() if p in _SAMPLED else pytest.mark.full) for p in PATHS],
)
def test_traces_and_compiles_equal_a_fresh_process(path: Path) -> None:
    traced, compiled = exhibit_counts(path)
    names = set(traced) | set(compiled)
    plain_traced, plain_compiled = plain_counts(path, names)
    assert compiled == plain_compiled
    assert traced == plain_traced
