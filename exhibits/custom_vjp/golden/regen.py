"""Regenerate ``exhibits/custom_vjp/golden/<example>.json`` from plain JAX (never from the probe).

For each ``exhibits/custom_vjp/examples/<name>.py``, executed under the file name ``<snippet>``:
``jax.grad(f, argnums=all)(*args)`` eagerly and under ``jax.jit`` (the value, or the error class
and first line), and ``str(jax.make_jaxpr(f)(*args))`` (or its error class). Non-finite numbers
are written as ``"nan"``/``"inf"``. Run: ``.venv/bin/python exhibits/custom_vjp/golden/regen.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jax
import numpy as np

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"


def load(path: Path) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def lists(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return [lists(v) for v in x]
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim:
        return [lists(v) for v in arr]
    v = float(arr)
    return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


def outcome(thunk: Any) -> dict[str, Any]:
    try:
        return {"value": lists(thunk())}
    except Exception as exc:  # the outcome is the golden value
        return {"error_class": type(exc).__name__, "error_first_line": str(exc).splitlines()[0]}


def golden(path: Path) -> dict[str, Any]:
    ns = load(path)
    f, args = ns["f"], tuple(ns["args"])
    argnums = tuple(range(len(args)))
    grad = jax.grad(f, argnums=argnums)
    out: dict[str, Any] = {
        "grad": outcome(lambda: grad(*args)),
        "jit_grad": outcome(lambda: jax.jit(grad)(*args)),
    }
    try:
        out["jaxpr"] = str(jax.make_jaxpr(f)(*args))
    except Exception as exc:
        out["jaxpr_error_class"] = type(exc).__name__
    return out


def main() -> None:
    for path in sorted(EXAMPLES.glob("*.py")):
        data = golden(path)
        (HERE / f"{path.stem}.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        print("wrote", path.stem)


if __name__ == "__main__":
    main()
