"""Regenerate ``exhibits/tracing/golden/<example>.json`` from plain JAX (never from the probe).

For each ``exhibits/tracing/examples/<name>.py``: execute it under the file name ``<snippet>``,
and record ``str(jax.make_jaxpr(f, static_argnums=...)(*args, **kwargs))`` (keyword arguments
named in ``static_argnames`` closed over with ``functools.partial``), the top-level primitives and
the number of top-level eqns. Run: ``.venv/bin/python exhibits/tracing/golden/regen.py``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jax

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"


def load(path: Path) -> dict[str, Any]:
    """Execute an example as a snippet would be (file name ``<snippet>``); its namespace."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def staged_jaxpr(ns: dict[str, Any]) -> Any:
    """The ClosedJaxpr ``jax.jit(f, static_argnums, static_argnames)`` traces, via make_jaxpr."""
    static_argnames = as_tuple(ns.get("static_argnames", ()))
    kwargs = dict(ns.get("kwargs", {}))
    static_kw = {k: v for k, v in kwargs.items() if k in static_argnames}
    dynamic_kw = {k: v for k, v in kwargs.items() if k not in static_argnames}
    fun = functools.partial(ns["f"], **static_kw) if static_kw else ns["f"]
    static_argnums = as_tuple(ns.get("static_argnums", ()))
    return jax.make_jaxpr(fun, static_argnums=static_argnums)(*ns["args"], **dynamic_kw)


def golden(path: Path) -> dict[str, Any]:
    closed = staged_jaxpr(load(path))
    return {
        "example": path.stem,
        "jax_version": jax.__version__,
        "jaxpr": str(closed),
        "primitives": sorted({e.primitive.name for e in closed.jaxpr.eqns}),
        "num_eqns": len(closed.jaxpr.eqns),
    }


def main() -> None:
    for path in sorted(EXAMPLES.glob("*.py")):
        out = HERE / f"{path.stem}.json"
        out.write_text(json.dumps(golden(path), indent=2, sort_keys=True) + "\n")
        print("wrote", out)


if __name__ == "__main__":
    main()
