"""Regenerate ``exhibits/vmap/golden/<example>.json`` from plain JAX (never from the probe).

For each example of the vmap exhibit that runs (``examples/*.py``; the error examples record
JAX's error class and first line instead): execute it under the file name ``<snippet>`` and
record ``str(jax.make_jaxpr(jax.vmap(f, in_axes, out_axes), static_argnums)(*args))``, the
outputs of ``jax.vmap(f, in_axes, out_axes)(*args)`` (``tolist()``) and their shapes.
``in_axes``/``out_axes`` are the snippet's, else 0. Run:
``.venv/bin/python exhibits/vmap/golden/regen.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import numpy as np

HERE = Path(__file__).resolve().parent
EXAMPLES = sorted((HERE.parent / "examples").glob("*.py"))


def load(path: Path) -> dict[str, Any]:
    """Execute an example as a snippet would be (file name ``<snippet>``); its namespace."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def vmap_parts(ns: dict[str, Any]) -> tuple[Any, tuple[Any, ...], Any]:
    """``(jax.vmap(f, in_axes, out_axes), args, static_argnums)`` of a snippet namespace."""
    args = tuple(ns["args"]) if isinstance(ns["args"], (tuple, list)) else (ns["args"],)
    fun = jax.vmap(ns["f"], in_axes=ns.get("in_axes", 0), out_axes=ns.get("out_axes", 0))
    return fun, args, tuple(ns.get("static_argnums", ()))


def golden(path: Path) -> dict[str, Any]:
    """The golden record of one example, from plain JAX."""
    fun, args, static = vmap_parts(load(path))
    try:
        text = str(jax.make_jaxpr(fun, static_argnums=static)(*args))
        out = jax.tree.leaves(fun(*args))
    except Exception as exc:  # the error examples record JAX's error
        return {"error_class": type(exc).__name__, "error_first_line": str(exc).splitlines()[0]}
    return {
        "batched_jaxpr": text,
        "outputs": [np.asarray(o).tolist() for o in out],
        "output_shapes": [list(np.shape(o)) for o in out],
    }


def main() -> None:
    for path in EXAMPLES:
        (HERE / f"{path.stem}.json").write_text(json.dumps(golden(path), indent=1) + "\n")
        print("wrote", path.stem)


if __name__ == "__main__":
    main()
