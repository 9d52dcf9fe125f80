"""Symbolic-shape errors explained by the case (issue 33, class 6): which symbolic dimension,
which operation needed it concrete, and the fix that applies, on the ``EX*`` cases (public
reports cited in their docstrings), through the CLI as a user meets them.

The truth is plain JAX in a fresh process (:data:`TRUTH`): what ``jax.export`` of the broken
case raises and the deepest snippet line on its traceback, the dimension variable's value in the
example, whether the fix the hint gives makes the export work (the ``_fixed`` case, and for a
comparison the constraint added to the broken one), whether a constraint could not help where
the hint says so, and that the fixed module computes what ``jax.jit(f)`` does and refuses the
shapes its constraint excludes.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from exhibits.conftest import CASES, jaxscope_run
from testkit import fresh_json

CASE_NAMES = ("EX01_searchsorted_symbolic", "EX02_linspace_symbolic", "EX03_python_range_symbolic")

# One fresh process for every case: plain jax.export on each, as a user would call it.
TRUTH = r"""
import json, runpy, sys, traceback, warnings
import jax, numpy as np
warnings.simplefilter("ignore")
cases = sys.argv[1]
out = {}

def export(ns, constraints=None):
    cons = ns.get("constraints", []) if constraints is None else constraints
    specs = jax.export.symbolic_args_specs(ns["args"], ns["shapes"], constraints=cons)
    return jax.export.export(jax.jit(ns["f"]))(*specs)

for name in sys.argv[2:]:
    path = f"{cases}/{name}_broken.py"
    ns = runpy.run_path(path)
    row = {}
    try:
        export(ns)
        row["error"] = None
    except Exception as exc:
        row["error"] = type(exc).__name__
        row["line"] = [fs.lineno for fs in traceback.extract_tb(exc.__traceback__)
                       if fs.filename == path][-1]
    fixed = runpy.run_path(f"{cases}/{name}_fixed.py")
    exp = export(fixed)
    row["fixed_call"] = np.asarray(exp.call(*fixed["args"])).tolist()
    row["fixed_jit"] = np.asarray(jax.jit(fixed["f"])(*fixed["args"])).tolist()
    out[name] = row

# EX01: a constraint cannot make searchsorted's size symbolic (the hint says so)
ns = runpy.run_path(f"{cases}/EX01_searchsorted_symbolic_broken.py")
try:
    export(ns, ["S >= 2", "S <= 1000"])
    out["EX01_searchsorted_symbolic"]["constrained"] = None
except Exception as exc:
    out["EX01_searchsorted_symbolic"]["constrained"] = type(exc).__name__
# ... while the fixed export serves another number of queries
fixed = runpy.run_path(f"{cases}/EX01_searchsorted_symbolic_fixed.py")
q = np.linspace(0, 1, 7, dtype=np.float32)
out["EX01_searchsorted_symbolic"]["other_n"] = [
    np.asarray(export(fixed).call(fixed["args"][0], q)).tolist(),
    np.searchsorted(fixed["args"][0], q).tolist(),
]
# EX02: the constraint of the hint, added to the broken case, is the fix; the module then
# refuses T = 1 (the shape assertion the hint names)
ns = runpy.run_path(f"{cases}/EX02_linspace_symbolic_broken.py")
exp = export(ns, ["T >= 2"])
try:
    exp.call(np.ones((1, 3), np.float32))
    out["EX02_linspace_symbolic"]["t1"] = None
except Exception as exc:
    out["EX02_linspace_symbolic"]["t1"] = str(exc).splitlines()[0]
out["EX02_linspace_symbolic"]["example_T"] = ns["args"][0].shape[0]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    result: dict[str, Any] = fresh_json(TRUTH, str(CASES), *CASE_NAMES, timeout=300)
    return result


def cli(name: str) -> tuple[int, list[dict[str, Any]]]:
    proc = jaxscope_run("export", CASES / f"{name}.py", "--json", "--timeout", "240")
    return proc.returncode, [json.loads(x) for x in proc.stdout.splitlines() if x.strip()]


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[int, list[dict[str, Any]]]]:
    return {f"{n}_{v}": cli(f"{n}_{v}") for n in CASE_NAMES for v in ("broken", "fixed")}


def failed(runs: dict[str, Any], name: str, truth: dict[str, Any]) -> dict[str, Any]:
    rc, evs = runs[f"{name}_broken"]
    assert rc == 1
    found: list[dict[str, Any]] = [e for e in evs if e["type"] == "run_failed"]
    (event,) = found
    assert event["error_class"] == truth[name]["error"]
    assert event["source"]["line"] == truth[name]["line"]
    assert not [e for e in evs if e["type"] == "function_exported"]
    return event


def test_a_size_searchsorted_needs_concrete(runs: Any, truth: dict[str, Any]) -> None:
    event = failed(runs, "EX01_searchsorted_symbolic", truth)
    why, fix = event["explanation"], event["fix"]
    assert "`jnp.searchsorted`, called at line 16" in why and "SearchSorted" in why
    assert "needed `S` as a concrete integer" in why and "The example has S = 11." in why
    assert "no constraint makes it symbolic" in fix and "`None` for argument 0 in `shapes`" in fix
    row = truth["EX01_searchsorted_symbolic"]
    assert row["constrained"] == "InconclusiveDimensionOperation"  # a constraint does not help
    assert row["other_n"][0] == row["other_n"][1]  # the fixed module: any number of queries


def test_a_comparison_inside_linspace_gets_the_constraint_that_decides_it(
    runs: Any, truth: dict[str, Any]
) -> None:
    event = failed(runs, "EX02_linspace_symbolic", truth)
    why, fix = event["explanation"], event["fix"]
    t = truth["EX02_linspace_symbolic"]["example_T"]
    assert "`jnp.linspace`, called at line 16" in why and "`T > 1`" in why
    assert f"With the example's T = {t} it is True: `T > 1` is {t} > 1." in why
    assert 'constraints = ["T >= 2"]' in fix and "shape assertion" in fix
    assert "jnp.where" not in fix  # the comparison is jnp.linspace's, not a branch of f's
    # the shape assertion the fix names refuses T = 1
    assert "T >= 2" in (truth["EX02_linspace_symbolic"]["t1"] or "")


def test_a_python_range_over_a_symbolic_dimension(runs: Any, truth: dict[str, Any]) -> None:
    event = failed(runs, "EX03_python_range_symbolic", truth)
    why, fix = event["explanation"], event["fix"]
    assert "Your own code at line 15 needed `b`" in why and "The example has b = 4." in why
    assert "jax.lax.fori_loop(0, x.shape[0], body, init)" in fix


@pytest.mark.parametrize("name", CASE_NAMES)
def test_the_fixed_case_exports_and_computes_what_jit_does(
    name: str, runs: Any, truth: dict[str, Any]
) -> None:
    rc, evs = runs[f"{name}_fixed"]
    assert rc == 0, [e for e in evs if e["type"] == "run_failed"]
    assert evs[-1]["type"] == "run_finished"
    assert truth[name]["fixed_call"] == truth[name]["fixed_jit"]


SLICE = """import numpy as np


def f(x):
    return x[: x.shape[0] - 4]


args = (np.arange(8, dtype=np.float32),)
shapes = ["(N,)"]
"""


def test_a_comparison_inside_indexing_names_the_indexing_and_its_constraint() -> None:
    # JAX's message ("the stop (N - 4) must be resolved statically if it is >= 0") carries the
    # comparison in its details; the constraint the hint gives makes plain jax.export work
    import jax
    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import load_snippet

    from exhibits.conftest import run_probe

    with pytest.raises(jax.errors.InconclusiveDimensionOperation) as info:
        run_probe("export", SLICE)
    failed = classify(info.value, "lower", load_snippet(SLICE).f)
    why, fix = failed.explanation or "", failed.fix or ""
    assert failed.source is not None and failed.source.line == 5
    assert "`x[...]`, called at line 5" in why and "`N - 4 >= 0`" in why
    assert 'constraints = ["N - 4 >= 0"]' in fix
    x = np.arange(8, dtype=np.float32)
    specs = jax.export.symbolic_args_specs((x,), ("N",), constraints=["N - 4 >= 0"])
    ns: dict[str, Any] = {}
    exec(SLICE, ns)
    exported: Any = jax.export.export(jax.jit(ns["f"]))(*specs)
    np.testing.assert_array_equal(np.asarray(exported.call(x)), x[:4])
