"""Flax NNX and linen train steps run in every autodiff/transform exhibit where JAX runs them
(issue 15): ``examples/real/nnx_adam_step.py`` (an NNX MLP split into graphdef and
``nnx.State``, one optax Adam step) and ``examples/real/linen_adam_step.py`` (a linen CNN with
batch norm, ``mutable=['batch_stats']``, one Adam step), through ``jaxscope run EXHIBIT FILE
--json`` as a user runs them.

Plain JAX is the truth, computed here: ``jax.jit(f)(*args)`` runs, so every exhibit must finish
(exit 0, no ``run_failed``); the loss the stations and pytree exhibits print is the plain call's;
the transpose exhibit's gradient is ``jax.grad`` of ``f``'s first leaf (the loss) with respect
to the arguments it differentiated, and its verdict is never a disagreement.
"""

from __future__ import annotations

import json
import runpy
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from exhibits.conftest import jaxscope_run
from testkit import sample, whole_matrices

REAL = Path(__file__).resolve().parents[1] / "examples" / "real"
PROGRAMS = ["nnx_adam_step", "linen_adam_step"]
EXHIBITS = [
    "tracing",
    "stations",
    "jvp",
    "partial_eval",
    "transpose",
    "nan_finder",
    "vmap",
    "transform_order",
    "caches",
    "pytree",
]


def program(name: str) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return runpy.run_path(str(REAL / f"{name}.py"))


def run(exhibit: str, name: str) -> list[dict[str, Any]]:
    proc = jaxscope_run(exhibit, REAL / f"{name}.py", "--json", "--timeout", "240")
    evs = [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]
    failed = [e for e in evs if e["type"] == "run_failed"]
    assert proc.returncode == 0 and not failed, (proc.stderr, failed)
    assert evs[-1]["type"] == "run_finished"
    return evs


def plain_loss(name: str) -> float:
    ns = program(name)
    return float(jax.jit(ns["f"])(*ns["args"])[0])


# The exhibits `make test` runs a Flax step through (each 11-26 s on 2 cores; design 0075):
# transpose (the gradient of a Flax step against jax.grad) and a fixed, seeded sample of four
# others. `make test-all` runs every exhibit with both programs.
_SAMPLED = {"transpose"} | set(
    sample([e for e in EXHIBITS if e != "transpose"], 4, key="test_flax_programs")
)
# Run in `make test` by test_real_examples.test_each_program_finishes_under_the_default_limits
# (its _LIMIT_CASES), which checks more of it (finished under the default limits, not --timeout
# 240, and its jaxpr's eqns are JAX's): here `make test-all` only (7.6 s in the last whole run).
_RUN_ELSEWHERE = {("nnx_adam_step", "tracing")}


def _matrix() -> list[Any]:
    """Every (program, exhibit): `make test` runs five of the exhibits, each with one of the two
    programs, NNX and linen in turn (each exhibit's code path for a Flax step); `make test-all`
    the whole matrix (design 0058)."""
    return [
        pytest.param(
            name,
            exhibit,
            id=f"{name}-{exhibit}",
            marks=()
            if i % 2 == PROGRAMS.index(name)
            and exhibit in _SAMPLED
            and (name, exhibit) not in _RUN_ELSEWHERE
            else pytest.mark.full,
        )
        for name in PROGRAMS
        for i, exhibit in enumerate(EXHIBITS)
    ]


# every sampled exhibit runs a Flax step in `make test`: here, or in test_real_examples
assert (
    whole_matrices()
    or {p.values[1] for p in _matrix() if not p.marks} | {e for _, e in _RUN_ELSEWHERE} == _SAMPLED
)


@pytest.mark.parametrize(("name", "exhibit"), _matrix())
def test_the_train_step_runs_in_the_exhibit_as_in_plain_jax(name: str, exhibit: str) -> None:
    evs = run(exhibit, name)
    if exhibit == "stations":
        (executed,) = [e for e in evs if e["type"] == "program_executed"]
        loss = executed["outputs"][0]
        assert loss["path"] == "[0]" and loss["shape"] == []
        np.testing.assert_allclose(float(loss["preview"]), plain_loss(name), rtol=1e-5)
    if exhibit == "pytree":
        (called,) = [e for e in evs if e["type"] == "pytree_called"]
        np.testing.assert_allclose(
            float(called["jit_outputs"][0]["preview"]), plain_loss(name), rtol=1e-5
        )
    if exhibit == "transpose":
        (checked,) = [e for e in evs if e["type"] == "gradient_checked"]
        assert checked["verdict"] != "disagree", checked["headline"]
        ns = program(name)
        f, args = ns["f"], ns["args"]
        argnums = tuple(checked["argnums"])
        want = jax.grad(lambda *a: jax.tree.leaves(f(*a))[0], argnums=argnums)(*args)
        compared = 0
        for k, i in enumerate(argnums):
            got = checked["gradient"][i]
            leaves = jax.tree.leaves(want[k])
            got_leaves = [got] if not isinstance(args[i], dict) and len(leaves) == 1 else got
            for g, w in zip(got_leaves, leaves, strict=True):
                if g is None:  # a leaf too large to send
                    continue
                np.testing.assert_allclose(np.asarray(g, np.float32), w, rtol=1e-4, atol=1e-6)
                compared += 1
        assert compared > 0
