"""Regenerate ``exhibits/transpose/golden/<example>.json`` from plain JAX (never from the probe).

For each example the transpose exhibit offers (its own ``examples/*.py`` and the shared
``mlp_loss``, ``attention``, ``rnn_loss``): execute it under the file name ``<snippet>`` and
record, with ``argnums`` = the snippet's ``argnums`` or every non-static argument whose leaves are
all floating:

* ``eager``: ``jax.grad(f, argnums)(*args)`` -> ``{"ok": true}`` or the error class and first line;
* ``jit``: ``jax.jit(jax.grad(f, argnums), static_argnums).trace(*args)``, the same way;
* ``gradient``: one entry per element of ``args`` (nested lists; a pytree argument as the list
  of its leaves in ``jax.tree.leaves`` order, ``null`` when not differentiated) of ``jax.grad``
  (of ``sum(f)`` for a non-scalar output); absent when the eager gradient fails for another reason.

Run: ``.venv/bin/python exhibits/transpose/golden/regen.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
EXAMPLES = {
    **{p.stem: p for p in sorted((HERE.parent / "examples").glob("*.py"))},
    "mlp_loss": REPO / "exhibits/tracing/examples/mlp_loss.py",
    "attention": REPO / "exhibits/tracing/examples/attention.py",
    "rnn_loss": REPO / "exhibits/jvp/examples/rnn_loss.py",
}


def load(path: Path) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def nested_array(x: Any) -> Any:
    arr = np.asarray(x)
    if arr.ndim == 0:
        v = float(arr)
        return v if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf"))
    return [nested_array(a) for a in arr]


def nested(tree: Any) -> Any:
    """An array as nested lists; any other pytree as the list of its leaves (``tree.leaves``)."""
    if jax.tree_util.treedef_is_leaf(jax.tree.structure(tree)):
        return nested_array(tree)
    return [nested_array(leaf) for leaf in jax.tree.leaves(tree)]


def floating(x: Any) -> bool:
    return isinstance(x, float) or (
        hasattr(x, "dtype") and np.issubdtype(np.dtype(x.dtype), np.floating)
    )


def outcome(thunk: Any) -> tuple[dict[str, Any], Any]:
    try:
        value = thunk()
    except Exception as exc:
        return {
            "ok": False,
            "error_class": type(exc).__name__,
            "error_first_line": str(exc).splitlines()[0],
        }, None
    return {"ok": True}, value


def golden(ns: dict[str, Any]) -> dict[str, Any]:
    f, args = ns["f"], tuple(ns["args"])
    static = tuple(ns.get("static_argnums", ()))
    chosen = ns.get("argnums")
    if chosen is not None:
        argnums = (chosen,) if isinstance(chosen, int) else tuple(chosen)
    else:
        argnums = tuple(
            i
            for i, a in enumerate(args)
            if i not in static
            and jax.tree.leaves(a)
            and all(floating(x) for x in jax.tree.leaves(a))
        )
    eager, value = outcome(lambda: jax.grad(f, argnums=argnums)(*args))
    jit, _ = outcome(
        lambda: jax.jit(jax.grad(f, argnums=argnums), static_argnums=static).trace(*args)
    )
    out: dict[str, Any] = {"argnums": list(argnums), "eager": eager, "jit": jit}
    if not eager["ok"] and "scalar-output" in eager["error_first_line"]:
        _, value = outcome(lambda: jax.grad(lambda *a: jnp.sum(f(*a)), argnums=argnums)(*args))
    if value is not None:
        per_arg: list[Any] = [None] * len(args)
        for i, g in zip(argnums, value, strict=True):
            per_arg[i] = nested(g)
        out["gradient"] = per_arg
    return out


def main() -> None:
    for name, path in EXAMPLES.items():
        data = golden(load(path))
        (HERE / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
        print(name, data["eager"], data["jit"])


if __name__ == "__main__":
    main()
