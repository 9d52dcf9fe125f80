"""Regenerate ``exhibits/nan_finder/golden/<example>.json`` from plain JAX (never from the probe).

For each ``exhibits/nan_finder/examples/<name>.py`` (executed under the file name ``<snippet>``):
``jax.grad(f, argnums=<every floating argument>)(*args)`` with NaN/Inf written as strings, the
flat positions of the non-finite elements of each argument's gradient, and what the same
``jax.grad`` raises under ``jax.debug_nans(True)``. Run:
``.venv/bin/python exhibits/nan_finder/golden/regen.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"


def load(path: Path) -> dict[str, Any]:
    """Execute an example as a snippet would be (file name ``<snippet>``); its namespace."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def _num(x: float) -> float | str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def as_numbers(g: Any) -> Any:
    arr = np.asarray(g, dtype=np.float64)
    flat = [_num(float(v)) for v in arr.ravel()]
    return np.array(flat, dtype=object).reshape(arr.shape).tolist() if arr.ndim else flat[0]


def golden(path: Path) -> dict[str, Any]:
    ns = load(path)
    f, args = ns["f"], tuple(ns["args"])
    argnums = tuple(
        i for i, a in enumerate(args) if jnp.issubdtype(jnp.result_type(a), jnp.inexact)
    )
    grads = jax.grad(f, argnums=argnums)(*args)
    gradient: list[Any] = [None] * len(args)
    nonfinite: list[Any] = [None] * len(args)
    for i, g in zip(argnums, grads, strict=True):
        gradient[i] = as_numbers(g)
        nonfinite[i] = np.flatnonzero(~np.isfinite(np.asarray(g).ravel())).tolist()
    try:
        with jax.debug_nans(True), contextlib.redirect_stdout(io.StringIO()):
            np.asarray(jax.grad(f, argnums=argnums)(*args)[0])
        debug_nans = None
    except FloatingPointError as e:
        debug_nans = f"FloatingPointError: {str(e).splitlines()[0]}"
    return {
        "example": path.stem,
        "jax_version": jax.__version__,
        "argnums": list(argnums),
        "gradient": gradient,
        "nonfinite_at": nonfinite,
        "has_nonfinite": any(bool(n) for n in nonfinite if n is not None),
        "debug_nans_error": debug_nans,
    }


def main() -> None:
    for path in sorted(EXAMPLES.glob("*.py")):
        out = HERE / f"{path.stem}.json"
        out.write_text(json.dumps(golden(path), indent=2, sort_keys=True) + "\n")
        print("wrote", out)


if __name__ == "__main__":
    main()
