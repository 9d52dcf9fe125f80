"""Regenerate ``exhibits/sharding/golden/<example>.json`` from plain JAX (never from the probe).

For each example (``examples/*.py``), executed under the file name ``<snippet>`` with 8 CPU
devices: ``args[0]`` placed with ``jax.device_put(args[0], NamedSharding(mesh, spec))`` (its
``addressable_shards`` in device order: device id, index ranges, shape, replica id), the
outputs of ``f`` called on that placed array as a user calls it (the same per leaf), those of
``jax.jit(f)`` (``jit_outputs``), and the collectives
in ``jax.jit(f).lower(...).compile().as_text()`` counted with a plain regex per op (the
instruction's op name followed by ``(`` or ``-start(``). An example that raises records JAX's
error class and first line. Run: ``.venv/bin/python exhibits/sharding/golden/regen.py``.
"""

from __future__ import annotations

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    )

import json
import re
from pathlib import Path
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

HERE = Path(__file__).resolve().parent
EXAMPLES = sorted((HERE.parent / "examples").glob("*.py"))
OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def load(path: Path) -> dict[str, Any]:
    """Execute an example as a snippet would be (file name ``<snippet>``); its namespace."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def shards(array: jax.Array) -> list[dict[str, Any]]:
    """``addressable_shards`` in device-id order, as plain data."""
    out = []
    for s in sorted(array.addressable_shards, key=lambda s: s.device.id):
        index = [list(sl.indices(d)[:2]) for sl, d in zip(s.index, array.shape, strict=True)]
        out.append(
            {
                "device_id": s.device.id,
                "index": index,
                "shape": list(s.data.shape),
                "replica_id": s.replica_id,
            }
        )
    return out


def collective_counts(hlo: str) -> dict[str, int]:
    """op -> count, the plain regex of the reference notes (``\\s op (-start)? \\(``)."""
    counts = {op: len(re.findall(r"\s" + op + r"(-start)?\(", hlo)) for op in OPS}
    return {op: n for op, n in counts.items() if n}


def golden(path: Path) -> dict[str, Any]:
    """The golden record of one example, from plain JAX."""
    ns = load(path)
    mesh = ns["mesh"]
    spec = ns.get("spec") or PartitionSpec()  # type: ignore[no-untyped-call]
    args = tuple(ns["args"])
    record: dict[str, Any] = {}
    try:
        x = jax.device_put(args[0], NamedSharding(mesh, spec))
        record["args0"] = shards(x)
        placed_args = (x, *args[1:])
        with jax.set_mesh(mesh):
            jf = jax.jit(ns["f"])
            compiled = jf.lower(*placed_args).compile()
            record["collectives"] = collective_counts(str(compiled.as_text()))
            jit_out = jax.tree.leaves(jf(*placed_args))
        record["jit_outputs"] = [shards(o) for o in jit_out]
        record["outputs"] = [shards(o) for o in jax.tree.leaves(ns["f"](*placed_args))]
    except Exception as exc:  # the error examples record JAX's error
        record["error_class"] = type(exc).__name__
        record["error_first_line"] = str(exc).splitlines()[0]
    return record


def main() -> None:
    for path in EXAMPLES:
        (HERE / f"{path.stem}.json").write_text(json.dumps(golden(path), indent=1) + "\n")
        print("wrote", path.stem)


if __name__ == "__main__":
    main()
