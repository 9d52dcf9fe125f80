"""Regenerate ``exhibits/pytree/golden/<example>.json`` from plain JAX (never from the probe).

For each example (``examples/*.py``), executed under the file name ``<snippet>``: the ``keystr``
paths, treedef string, ``num_leaves``/``num_nodes`` of ``jax.tree_util.tree_flatten_with_path(
args, is_leaf)`` (and of ``other`` when the example has one, with ``treedef ==``), the text of
``jax.make_jaxpr(f, static_argnums)(*args)`` and the leaves of ``jax.jit(f)(*args)``
(``tolist()``). Run: ``.venv/bin/python exhibits/pytree/golden/regen.py``.
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
    exec(compile(path.read_text(), "<snippet>", "exec", dont_inherit=True), namespace)
    return namespace


def flat_record(tree: Any, is_leaf: Any) -> dict[str, Any]:
    """Key paths, treedef string and counts of ``tree`` as JAX flattens it."""
    treedef: Any
    with_path, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    return {
        "keypaths": [jax.tree_util.keystr(p) for p, _ in with_path],
        "treedef": str(treedef),
        "num_leaves": treedef.num_leaves,
        "num_nodes": treedef.num_nodes,
    }


def _structure(tree: Any, is_leaf: Any) -> Any:
    return jax.tree_util.tree_structure(tree, is_leaf=is_leaf)


def golden(path: Path) -> dict[str, Any]:
    """The golden record of one example, from plain JAX."""
    ns = load(path)
    args = tuple(ns["args"])
    is_leaf = ns.get("is_leaf")
    static = tuple(ns.get("static_argnums", ()))
    record: dict[str, Any] = {"args": flat_record(args, is_leaf)}
    if "other" in ns:
        record["other"] = flat_record(ns["other"], is_leaf)
        record["treedefs_equal"] = bool(
            _structure(args, is_leaf) == _structure(ns["other"], is_leaf)
        )
    record["jaxpr"] = str(jax.make_jaxpr(ns["f"], static_argnums=static)(*args))
    out = jax.jit(ns["f"], static_argnums=static)(*args)
    record["jit_out"] = [np.asarray(o).tolist() for o in jax.tree.leaves(out)]
    return record


def main() -> None:
    for path in EXAMPLES:
        (HERE / f"{path.stem}.json").write_text(json.dumps(golden(path), indent=1) + "\n")
        print("wrote", path.stem)


if __name__ == "__main__":
    main()
