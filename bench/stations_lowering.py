"""Benchmark: the stations exhibit's trace and lower stations on a long Python loop, against
``jax.jit(f).lower(...)``.

The snippet is the break-it review's: ``x = x * 1.0001 + 0.1`` repeated 2,500 times by a Python
loop (5,000 eqns on one line, 15,000 StableHLO ops). One repeat, on a freshly loaded snippet
(new function objects, so neither side hits JAX's caches):

* **jaxscope**: what the stations probe does before ``module_lowered`` is sent: ``jf.trace``
  with every eqn recorded (``recording_eqns``), the ``JaxprStaged`` view, ``traced.lower()``
  and :func:`jaxscope.internals.lowering.module_lowered` (texts and op links);
* **plain JAX**: ``jax.jit(f).lower(*args)``.

The figure is the ratio of the medians (numbers, not pass/fail); ``parts_median_ms`` where the
time goes; ``op_links_median_ms`` is the op
links' part, at 1x and at 4x the loop (near-linear: about 4x the time; it was quadratic: 16 s
at 1x). Compiling the 15,000 ops (XLA, the next station) is not included.

Usage: ``.venv/bin/python bench/stations_lowering.py [--repeats N] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
from jaxscope.internals.calling import plan_call
from jaxscope.internals.lowering import module_lowered, op_links
from jaxscope.internals.recording import recording_eqns
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import JaxprStaged
from jaxscope.sandbox.snippet import load_snippet
from timing import median_s  # bench/timing.py (scripts run with bench/ on the path)

SNIPPET = """
import jax.numpy as jnp

def f(x):
    for i in range(STEPS):
        x = x * 1.0001 + 0.1
    return x

args = (jnp.ones(3),)
"""
STEPS = 2500


def source(steps: int) -> str:
    return SNIPPET.replace("STEPS", str(steps))


def stations(steps: int, parts: dict[str, list[float]] | None = None) -> None:
    """The stations probe up to ``module_lowered`` (events built, not sent). With ``parts``,
    each part's seconds are appended to ``parts[name]``."""
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        if parts is not None:
            parts.setdefault(name, []).append(now - clock[0])
        clock[0] = now

    plan = plan_call(load_snippet(source(steps)))
    jf = plan.jit()
    sent: list[Any] = []
    with recording_eqns(sent.append):
        traced: Any = jf.trace(*plan.args, **plan.kwargs, **plan.static_kwargs)
    lap("trace (eqns recorded)")
    JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(traced.jaxpr))
    lap("jaxpr view")
    lowered = traced.lower()
    lap("lower")
    module_lowered(lowered, traced.jaxpr)
    lap("module_lowered (texts, op links)")


def plain(steps: int) -> None:
    """``jax.jit(f).lower(*args)`` on a fresh snippet."""
    snippet = load_snippet(source(steps))
    jax.jit(snippet.f).lower(*snippet.args)


def links_only(steps: int) -> Callable[[], None]:
    """Op links alone, on texts and a jaxpr made beforehand."""
    snippet = load_snippet(source(steps))
    lowered = jax.jit(snippet.f).trace(*snippet.args).lower()
    texts = lowered.as_text(), lowered.as_text(debug_info=True)
    closed = jax.make_jaxpr(snippet.f)(*snippet.args)

    def run() -> None:
        op_links(*texts, closed)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    ns = parser.parse_args()
    stations(10)  # warm imports and JAX's own helpers
    plain(10)
    parts: dict[str, list[float]] = {}
    ours = median_s(lambda: stations(STEPS, parts), ns.repeats)
    theirs = median_s(lambda: plain(STEPS), ns.repeats)
    links = {n: median_s(links_only(n), ns.repeats) for n in (STEPS, 4 * STEPS)}
    result: dict[str, Any] = {
        "eqns": 2 * STEPS,
        "repeats": ns.repeats,
        "stations_to_module_lowered_median_ms": round(ours * 1e3, 1),
        "jit_lower_median_ms": round(theirs * 1e3, 1),
        "ratio": round(ours / theirs, 2),
        "parts_median_ms": {k: round(statistics.median(v) * 1e3, 1) for k, v in parts.items()},
        "op_links_median_ms": {f"{2 * n} eqns": round(s * 1e3, 1) for n, s in links.items()},
        "op_links_4x_over_1x": round(links[4 * STEPS] / links[STEPS], 2),
    }
    print(json.dumps(result, indent=2))
    if ns.json:
        ns.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
