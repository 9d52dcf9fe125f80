"""A dtype JAX changed without being asked is a finding (issue 15, "Silent changes are
findings"): the ``cases/DT*`` snippets (public reports cited in their docstrings) run through the
real sandbox with ``jaxscope run dtypes FILE --print changes``. A float64 argument only rounded
to float32 is a note (exit 0), values a 32-bit copy corrupts are a finding (exit 3).

The truth, computed apart from the exhibit: each snippet run as plain Python in a fresh process
(its own x64 setting) says which dtypes ``f`` takes and returns; ``jnp.result_type`` of the
value's dtype and the constant's says what the promotion makes; numpy says which elements of a
float64 argument its float32 rounding changes. The snippet's text gives the line. A fixed case
must print ``[]`` and exit 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from exhibits.conftest import CASES, jaxscope_run

# Runs a snippet as plain Python and says what JAX made of it: the dtypes f takes and returns.
PLAIN = """
import json, runpy, sys
import jax, numpy as np
ns = runpy.run_path(sys.argv[1])
out = ns["f"](*ns["args"])
print(json.dumps({
    "x64": bool(jax.config.read("jax_enable_x64")),
    "args": [str(np.asarray(a).dtype) for a in ns["args"]],
    "out": str(out.dtype),
    "values": np.asarray(out).tolist() if np.size(out) <= 64 else None,
    "arg_values": [np.asarray(a).tolist() if np.size(a) <= 64 else None for a in ns["args"]],
}))
"""


def changes(name: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = jaxscope_run("dtypes", CASES / f"{name}.py", "--print", "changes")
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def plain(name: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", PLAIN, str(CASES / f"{name}.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def line_of(name: str, piece: str) -> int:
    """The line of the snippet that holds ``piece`` (once)."""
    text = (CASES / f"{name}.py").read_text().splitlines()
    (line,) = [i for i, t in enumerate(text, 1) if piece in t]
    return line


@pytest.mark.parametrize(
    ("name", "piece", "value", "constant", "api"),
    [
        # optax#1405: a numpy float32 learning rate times bfloat16 grads
        ("DT01_bf16_numpy_lr_broken", "step = lr * grads", jnp.bfloat16, np.float32(1e-3), "*"),
        # jaqmc#64: with x64 on, np.sqrt's float64 scalar times a float32 layer
        ("DT02_x64_numpy_scale_broken", "jnp.tanh(h * scale)", np.float32, np.float64(0.35), "*"),
    ],
)
def test_a_promotion_that_lasts_is_a_finding_at_its_line(
    name: str, piece: str, value: Any, constant: Any, api: str
) -> None:
    truth = plain(name)
    assert truth["out"] != truth["args"][0]  # plain JAX: f returns a wider dtype than it took
    code, found, stderr = changes(name)
    assert code == 3 and "DtypePromoted" in stderr
    (change,) = found  # the cascade after it (params - step) is its consequence, not listed
    assert change["kind"] == "promoted" and change["line"] == line_of(name, piece)
    assert change["api"] == api
    with jax.enable_x64(truth["x64"]):  # the snippet's own setting
        wider = np.dtype(jnp.result_type(jnp.zeros(1, value), constant))
    assert str(wider) == truth["out"]
    assert change["from_type"].startswith({"bfloat16": "bf16", "float32": "f32"}[truth["args"][0]])
    assert change["to_type"].startswith({"float32": "f32", "float64": "f64"}[str(wider)])
    assert change["partner"].endswith("constant")
    assert f"line {change['line']}" in stderr


def test_a_float64_argument_rounded_to_float32_is_a_note_not_a_finding() -> None:
    """jax#652: the Hilbert matrix's entries are rounded to the nearest float32, each within
    float32's unit roundoff (2**-24 of the value), which is what JAX documents for x64 off. The
    precision the reporter lost in what they computed from it is the conditioning of the
    matrix, not a corrupted input: the run says the rounding (a note, with the count and the
    first element) and exits 0 (design 0024: only corrupted values are findings)."""
    name = "DT03_float64_arg_broken"
    truth = plain(name)
    assert not truth["x64"] and truth["args"] == ["float64"]
    n = 4
    hilbert = 1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0)
    rounded = hilbert.astype(np.float32).astype(np.float64)
    changed = np.argwhere(rounded != hilbert)
    # numpy: every change is a rounding: within 2**-24 of the value, none to inf or 0
    assert np.all(np.abs(rounded - hilbert) <= 2.0**-24 * np.abs(hilbert))
    code, found, stderr = changes(name)
    assert code == 0 and "DtypeDemoted" in stderr and "found a problem" not in stderr
    (note,) = [t for t in stderr.splitlines() if t.startswith("jaxscope: note")]
    assert f"DtypeDemoted at line {line_of(name, 'args = (')}, not a finding" in note
    (change,) = found
    assert change["kind"] == "demoted" and change["api"] == "args[0]"
    assert change["finding"] is False and change["corrupted"] == 0
    assert change["line"] == line_of(name, "args = (")
    assert (change["changed"], change["total"]) == (len(changed), hilbert.size)
    i, j = changed[0]
    before, after = float(hilbert[i, j]), float(np.float32(hilbert[i, j]))
    assert change["example"] == f"args[0][{i}, {j}]: {before!r} -> {after!r}"
    assert change["example"] in note
    assert (change["from_type"], change["to_type"]) == ("f64[4,4]", "f32[4,4]")


def test_int64_ids_wrapped_to_int32_are_a_finding() -> None:
    """jax#18385: with x64 off JAX casts numpy int64 ids above 2**31 to int32 without a range
    check. Truth: plain JAX's buckets differ from numpy's exactly where the id does not fit in
    int32, and the value JAX holds is numpy's wrapping cast."""
    name = "DT04_int64_ids_broken"
    truth = plain(name)
    assert not truth["x64"] and truth["args"] == ["int64"] and truth["out"] == "int32"
    ids = np.array(truth["arg_values"][0], dtype=np.int64)
    buckets = np.array(truth["values"])  # plain JAX, in its own process
    wrong = np.flatnonzero(buckets != ids % 1000)
    outside = np.flatnonzero((ids > np.iinfo(np.int32).max) | (ids < np.iinfo(np.int32).min))
    assert list(wrong) == list(outside) and len(wrong) == 2
    code, found, stderr = changes(name)
    assert code == 3 and "found a problem (DtypeDemoted)" in stderr
    (change,) = found
    assert (change["kind"], change["api"], change["finding"]) == ("demoted", "args[0]", True)
    assert change["line"] == line_of(name, "args = (")
    assert (change["corrupted"], change["changed"], change["total"]) == (2, 2, 3)
    assert change["corruption"] == "wrapped"
    k = int(outside[0])
    held = int(ids.astype(np.int32)[k])  # numpy's wrapping cast, what JAX holds
    assert change["corrupt_example"] == f"args[0][{k}]: {int(ids[k])} -> {held}"
    assert (change["from_type"], change["to_type"]) == ("i64[3]", "i32[3]")
    assert f"line {change['line']}" in stderr


def test_the_int64_ids_fixed_with_x64_keep_every_bucket() -> None:
    """Truth: the fixed snippet run as plain Python (x64 on, in its own process) gives numpy's
    bucket of every id."""
    name = "DT04_int64_ids_fixed"
    truth = plain(name)
    assert truth["x64"] and truth["out"] == "int64"
    ids = np.array(truth["arg_values"][0], dtype=np.int64)
    assert ids.max() > np.iinfo(np.int32).max
    assert truth["values"] == (ids % 1000).tolist()
    code, found, stderr = changes(name)
    assert (code, found) == (0, []) and "jaxscope: note" not in stderr


@pytest.mark.parametrize(
    "name",
    ["DT01_bf16_numpy_lr_fixed", "DT02_x64_numpy_scale_fixed", "DT03_float64_arg_fixed"],
)
def test_the_fixed_cases_change_no_dtype(name: str) -> None:
    truth = plain(name)
    assert truth["out"] == truth["args"][0]  # plain JAX: f keeps its arguments' dtype
    code, found, _ = changes(name)
    assert code == 0 and found == []
