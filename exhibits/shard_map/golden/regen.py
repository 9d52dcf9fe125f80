"""Regenerate ``exhibits/shard_map/golden/<example>.json`` from plain JAX (never from the probe).

For each example (``examples/*.py``), executed as a snippet (file name ``<snippet>``): the
verdict of ``jax.jit(jax.shard_map(f, mesh=, in_specs=, out_specs=, check_vma=))(*args)``
(``ok``, or JAX's error class and message), the per-device shape of every argument from
``NamedSharding(mesh, spec).shard_shape(shape)`` (independent of shard_map; ``None`` where the
spec does not fit the argument), and, when it ran, the outputs (``tolist()``) with their shapes
and the device blocks of each (``addressable_shards``: device id, index ranges). Run:
``.venv/bin/python exhibits/shard_map/golden/regen.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

HERE = Path(__file__).resolve().parent
# The snippet-form examples (those that give in_specs; found_in_jit.py is real code whose f
# calls jax.shard_map itself, tested in test_found_in_f.py).
EXAMPLES = sorted(
    p for p in (HERE.parent / "examples").glob("*.py") if "\nin_specs = " in p.read_text()
)


def load(path: Path) -> dict[str, Any]:
    """Execute an example as a snippet would be (file name ``<snippet>``); its namespace."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def per_device_shapes(ns: dict[str, Any]) -> list[list[int] | None]:
    """``NamedSharding(mesh, spec).shard_shape(arg.shape)`` per argument leaf (``None``: the
    spec names an axis the mesh lacks, is longer than the rank, or does not divide)."""
    args = tuple(ns["args"])
    specs = jax.tree.leaves(
        jax.tree.broadcast(ns["in_specs"], args, is_leaf=lambda x: x is None),
        is_leaf=lambda x: isinstance(x, PartitionSpec),
    )
    shapes: list[list[int] | None] = []
    for spec, leaf in zip(specs, jax.tree.leaves(args), strict=True):
        try:
            shapes.append(list(NamedSharding(ns["mesh"], spec).shard_shape(np.shape(leaf))))
        except Exception:
            shapes.append(None)
    return shapes


def golden(path: Path) -> dict[str, Any]:
    """The golden record of one example, from plain JAX."""
    ns = load(path)
    fun = jax.shard_map(
        ns["f"],
        mesh=ns["mesh"],
        in_specs=ns["in_specs"],
        out_specs=ns["out_specs"],
        check_vma=ns.get("check_vma", True),
    )
    record: dict[str, Any] = {"per_device_shapes": per_device_shapes(ns)}
    try:
        out = jax.tree.leaves(jax.jit(fun)(*ns["args"]))
    except Exception as exc:
        record.update(ok=False, error_class=type(exc).__name__, message=str(exc))
        return record
    record.update(
        ok=True,
        outputs=[np.asarray(o).tolist() for o in out],
        output_shapes=[list(o.shape) for o in out],
        blocks=[
            [
                [
                    s.device.id,
                    [list(sl.indices(n)[:2]) for sl, n in zip(s.index, o.shape, strict=False)],
                ]
                for s in sorted(o.addressable_shards, key=lambda s: s.device.id)
            ]
            for o in out
        ],
    )
    return record


def normalised(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with every ``frozenset({...})`` in the message sorted (set order follows the
    process's string hash seed, so JAX prints ``frozenset({'x', 'y'})`` either way round)."""
    if "message" not in record:
        return record

    def sort(m: re.Match[str]) -> str:
        return "frozenset({" + ", ".join(sorted(m.group(1).split(", "))) + "})"

    return {**record, "message": re.sub(r"frozenset\(\{([^}]*)\}\)", sort, record["message"])}


def main() -> None:
    for path in EXAMPLES:
        text = json.dumps(normalised(golden(path)), indent=1)
        (HERE / f"{path.stem}.json").write_text(text + "\n")
        print("wrote", path.stem)


if __name__ == "__main__":
    main()
