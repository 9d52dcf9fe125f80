"""Regenerate ``exhibits/jvp/golden/<example>.json`` from plain JAX (never from the probe).

For each example the jvp exhibit offers (its own ``examples/*.py`` and ``mlp_loss``/``attention``
from ``exhibits/tracing/examples``): execute it under the file name ``<snippet>``, choose the
tangents as the exhibit does (the snippet's ``tangents``, else ones for floating leaves and the
``float0`` zero for integer leaves), and record ``str(jax.make_jaxpr(lambda primals, tangents:
jax.jvp(f_closed, primals, tangents))(primals, tangents))`` and the outputs of
``jax.jvp(f_closed, primals, tangents)`` (``tolist()``). ``f_closed`` takes the dynamic
positional arguments and puts the static ones (``static_argnums``) back; keyword arguments are
closed over. Run: ``.venv/bin/python exhibits/jvp/golden/regen.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import numpy as np

HERE = Path(__file__).resolve().parent
EXHIBITS = HERE.parent.parent
EXAMPLES = [
    *sorted((HERE.parent / "examples").glob("*.py")),
    EXHIBITS / "tracing" / "examples" / "mlp_loss.py",
    EXHIBITS / "tracing" / "examples" / "attention.py",
]


def load(path: Path) -> dict[str, Any]:
    """Execute an example as a snippet would be (file name ``<snippet>``); its namespace."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def default_tangent(x: Any) -> Any:
    if isinstance(x, bool) or (isinstance(x, int) and not isinstance(x, float)):
        return np.zeros((), jax.dtypes.float0)
    if isinstance(x, float):
        return 1.0
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.inexact):
        return np.ones(x.shape, x.dtype)
    return np.zeros(x.shape, jax.dtypes.float0)


def jvp_parts(ns: dict[str, Any]) -> tuple[Any, tuple[Any, ...], tuple[Any, ...]]:
    """``(f_closed, primals, tangents)`` as the exhibit builds them."""
    args = as_tuple(ns["args"])
    static = {i % len(args) for i in as_tuple(ns.get("static_argnums", ()))}
    kwargs = dict(ns.get("kwargs", {}))
    primals = tuple(a for i, a in enumerate(args) if i not in static)

    def f_closed(*dynamic: Any) -> Any:
        it = iter(dynamic)
        return ns["f"](*[args[i] if i in static else next(it) for i in range(len(args))], **kwargs)

    given = ns.get("tangents")
    tangents = as_tuple(given) if given is not None else jax.tree.map(default_tangent, primals)
    return f_closed, primals, tuple(tangents)


def nested(x: Any) -> Any:
    arr = np.asarray(x)
    return None if arr.dtype == jax.dtypes.float0 else arr.astype(np.float64).tolist()


def golden(path: Path) -> dict[str, Any]:
    f_closed, primals, tangents = jvp_parts(load(path))
    closed = jax.make_jaxpr(lambda p, t: jax.jvp(f_closed, p, t))(primals, tangents)
    primals_out, tangents_out = jax.jvp(f_closed, primals, tangents)
    return {
        "example": path.stem,
        "jax_version": jax.__version__,
        "jvp_jaxpr": str(closed),
        "num_eqns": len(closed.jaxpr.eqns),
        "primals_out": [nested(x) for x in jax.tree.leaves(primals_out)],
        "tangents_out": [nested(x) for x in jax.tree.leaves(tangents_out)],
    }


def main() -> None:
    for path in EXAMPLES:
        out = HERE / f"{path.stem}.json"
        out.write_text(json.dumps(golden(path), indent=2, sort_keys=True) + "\n")
        print("wrote", out)


if __name__ == "__main__":
    main()
