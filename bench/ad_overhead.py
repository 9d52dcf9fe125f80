"""Benchmark: what the autodiff exhibits' capture costs, against ``make_jaxpr(grad(f))``.

The function is an MLP with layer norm and GELU. The issue's example, 4 such layers, is 112
equations in JAX 0.10.2 (``jnp`` helpers no longer leave nested ``jit`` eqns here), so the
benchmark stacks 36 layers: about 1,000 equations (the count is printed). One repeat, on a
freshly loaded snippet (new function objects, so neither side hits JAX's tracing caches):

* **jaxscope**: the full capture of the three AD exhibits, as their probes do it —
  ``jvp``: the primal jaxpr and ``capture_jvp`` (every JVP rule step with values, JAX's JVP
  jaxpr attributed); ``partial_eval``: ``jvp_program`` and ``split_event`` (JAX's partial
  evaluator on the JVP jaxpr, residual origins); ``transpose``: ``linearize_vjp`` and ``walk``
  with every step turned into its ``TransposeStepped`` event (the remat table, the finite
  differences and the jit/eager attempts are checks, not capture, and are not included);
* **plain JAX**: ``jax.make_jaxpr(jax.grad(f, argnums=0))(*args)``;
* **the floor**: only the JAX calls the three exhibits cannot do without, with nothing recorded,
  viewed or previewed: ``make_jaxpr(f)``; JAX's JVP jaxpr ``make_jaxpr(jvp(f))``; the values of
  every JVP eqn (eager ``jax.jvp``); ``jvp_program`` and JAX's partial evaluator on it; the
  linearisation and its backward pass on values (``plain_backward_pass``: what ``jax.vjp``'s
  function runs); and JAX's own text (``str``) of each jaxpr the exhibits show (primal, JVP twice:
  two exhibits, known, unknown, linear).

The figure is the ratio of the medians. Goal (issue 3): at most 5x. ``parts_median_ms`` is the
median of each part of the capture (where the time goes; docs/design/0013-ad-capture-speed.md);
``exhibits_ratio`` each exhibit's share of the capture against ``make_jaxpr(grad)`` (an exhibit
is one run: its user waits for its share only); ``floor_ratio`` what the floor alone costs.

Usage: ``.venv/bin/python bench/ad_overhead.py [--repeats N] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import jax
from jaxscope.internals.calling import concrete_args, plan_call
from jaxscope.internals.jvp_steps import capture_jvp, choose_tangents, closed_function
from jaxscope.internals.split import default_known, jvp_program, split_event, split_jaxpr
from jaxscope.internals.transpose_walk import (
    linear_jaxpr_staged,
    linearize_vjp,
    plain_backward_pass,
    seed_cotangents,
    walk,
)
from jaxscope.sandbox.snippet import load_snippet
from timing import median_s  # bench/timing.py (scripts run with bench/ on the path)

SNIPPET = """
import jax
import jax.numpy as jnp
import numpy as np


def layer_norm(h, g, b):
    mu = jnp.mean(h, axis=-1, keepdims=True)
    var = jnp.mean((h - mu) ** 2, axis=-1, keepdims=True)
    return g * (h - mu) / jnp.sqrt(var + 1e-5) + b


def f(params, x, y):
    h = x
    for p in params:
        h = jax.nn.gelu(layer_norm(h @ p["w"] + p["b"], p["g"], p["beta"]))
    return jnp.mean((h - y) ** 2)


rng = np.random.default_rng(0)
d = 16
params = [
    {
        "w": (rng.standard_normal((d, d)) * 0.3).astype(np.float32),
        "b": np.zeros(d, np.float32),
        "g": np.ones(d, np.float32),
        "beta": np.zeros(d, np.float32),
    }
    for _ in range(36)
]
x = rng.standard_normal((8, d)).astype(np.float32)
y = rng.standard_normal((8, d)).astype(np.float32)
args = (params, x, y)
"""


def count_eqns(jaxpr: Any) -> int:
    """Eqns of ``jaxpr`` plus those of every jaxpr nested in an eqn's params."""
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for sub in _subjaxprs(eqn):
            total += count_eqns(sub)
    return total


def _subjaxprs(eqn: Any) -> list[Any]:
    found = []
    for value in eqn.params.values():
        for v in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(v, "jaxpr", v)
            if hasattr(inner, "eqns"):
                found.append(inner)
    return found


def capture(parts: dict[str, list[float]] | None = None) -> None:
    """The three AD exhibits' capture on a fresh snippet (as their probes do it). With ``parts``,
    each part's seconds are appended to ``parts[name]``."""
    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        if parts is not None:
            parts.setdefault(name, []).append(now - clock[0])
        clock[0] = now

    snippet = load_snippet(SNIPPET)
    plan = plan_call(snippet)
    primal = plan.make_jaxpr()
    lap("primal make_jaxpr")
    capture_jvp(plan, primal)
    lap("jvp: capture_jvp")
    program = jvp_program(plan)
    lap("partial_eval: jvp_program")
    split_event(program, default_known(len(program.labels), program.n_primals))
    lap("partial_eval: split_event")

    def loss(params: Any) -> Any:
        return snippet.f(params, *snippet.args[1:])

    lin = linearize_vjp(loss, [snippet.args[0]])
    lap("transpose: linearize_vjp")
    linear_jaxpr_staged(lin)
    lap("transpose: linear_jaxpr_staged")
    result = walk(lin, seed_cotangents(lin))
    lap("transpose: walk")
    # Each step's TransposeStepped (built on first use) is what the probe streams: build and
    # serialise it as the worker does.
    for step in result.steps:
        step.event.model_dump_json()
    lap("transpose: step events (built and serialised)")


def floor() -> None:
    """The JAX calls the capture cannot do without (see the module docstring), nothing else."""
    snippet = load_snippet(SNIPPET)
    plan = plan_call(snippet)
    str(plan.make_jaxpr())
    dynamic = concrete_args(plan.dynamic_args())
    tangents = choose_tangents(dynamic, None)
    f_closed = closed_function(plan)
    str(jax.make_jaxpr(lambda p, t: jax.jvp(f_closed, p, t))(dynamic, tangents))
    jax.jvp(f_closed, dynamic, tangents)
    program = jvp_program(plan)
    split = split_jaxpr(program.jaxpr, default_known(len(program.labels), program.n_primals))
    for closed in (program.jaxpr, split.known, split.unknown):
        str(closed)

    def loss(params: Any) -> Any:
        return snippet.f(params, *snippet.args[1:])

    lin = linearize_vjp(loss, [snippet.args[0]])
    str(lin.closed())
    plain_backward_pass(lin, seed_cotangents(lin))


def plain() -> None:
    """``jax.make_jaxpr(jax.grad(f))`` on a fresh snippet."""
    snippet = load_snippet(SNIPPET)
    jax.make_jaxpr(jax.grad(snippet.f))(*snippet.args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path, default=None)
    ns = parser.parse_args()
    snippet = load_snippet(SNIPPET)
    eqns = count_eqns(jax.make_jaxpr(snippet.f)(*snippet.args).jaxpr)
    # Warm every path once (imports, first-use compilation of JAX's own helpers).
    capture()
    floor()
    plain()
    parts: dict[str, list[float]] = {}
    ours = median_s(lambda: capture(parts), ns.repeats)
    theirs = median_s(plain, ns.repeats)
    least = median_s(floor, ns.repeats)
    parts_ms = {k: statistics.median(v) * 1e3 for k, v in parts.items()}
    prefixes = {
        "jvp": ("primal", "jvp:"),
        "partial_eval": ("partial_eval:",),
        "transpose": ("transpose:",),
    }
    exhibits = {
        name: sum(ms for part, ms in parts_ms.items() if part.startswith(p))
        for name, p in prefixes.items()
    }
    result: dict[str, Any] = {
        "eqns": eqns,
        "repeats": ns.repeats,
        "capture_median_ms": round(ours * 1e3, 1),
        "make_jaxpr_grad_median_ms": round(theirs * 1e3, 1),
        "ratio": round(ours / theirs, 2),
        "goal_ratio": 5.0,
        "floor_median_ms": round(least * 1e3, 1),
        "floor_ratio": round(least / theirs, 2),
        "exhibits_ratio": {k: round(ms / 1e3 / theirs, 2) for k, ms in exhibits.items()},
        "parts_median_ms": {k: round(ms, 1) for k, ms in parts_ms.items()},
    }
    print(json.dumps(result, indent=2))
    if ns.json:
        ns.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
