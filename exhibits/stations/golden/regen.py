"""Regenerate ``exhibits/stations/golden/<example>.json`` from plain JAX (never from the probe).

The stations exhibit offers the tracing exhibit's examples and its own
(``exhibits/stations/examples``). For each: execute it under the file name ``<snippet>``, then
``lowered = jax.jit(f, static_argnums, static_argnames).lower(*args, **kwargs)`` and record the
jaxpr text, the StableHLO op counts (walking ``lowered.compiler_ir("stablehlo")``: every op of
every region, by name) and the output shapes/dtypes (``jax.eval_shape``).
Run: ``.venv/bin/python exhibits/stations/golden/regen.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax

from exhibits.tracing.golden.regen import as_tuple, load, staged_jaxpr

HERE = Path(__file__).resolve().parent
EXAMPLE_DIRS = [HERE.parent.parent / "tracing" / "examples", HERE.parent / "examples"]


def op_counts(operation: Any, counts: dict[str, int]) -> dict[str, int]:
    """Count every op nested in ``operation``'s regions, by op name."""
    for region in operation.regions:
        for block in region.blocks:
            for op in block.operations:
                counts[op.operation.name] = counts.get(op.operation.name, 0) + 1
                op_counts(op.operation, counts)
    return counts


def golden(path: Path) -> dict[str, Any]:
    ns = load(path)
    static_argnames = as_tuple(ns.get("static_argnames", ()))
    kwargs = dict(ns.get("kwargs", {}))
    jf = jax.jit(
        ns["f"],
        static_argnums=as_tuple(ns.get("static_argnums", ())),
        static_argnames=static_argnames,
    )
    lowered = jf.lower(*ns["args"], **kwargs)
    module = lowered.compiler_ir("stablehlo")
    assert module is not None
    out = jax.eval_shape(lambda: jf(*ns["args"], **kwargs))
    return {
        "example": path.stem,
        "jax_version": jax.__version__,
        "jaxpr": str(staged_jaxpr(ns)),
        "stablehlo_op_counts": dict(sorted(op_counts(module.operation, {}).items())),
        "outputs": [
            {"path": jax.tree_util.keystr(p), "shape": list(leaf.shape), "dtype": str(leaf.dtype)}
            for p, leaf in jax.tree_util.tree_flatten_with_path(out)[0]
        ],
    }


def main() -> None:
    for folder in EXAMPLE_DIRS:
        for path in sorted(folder.glob("*.py")):
            out = HERE / f"{path.stem}.json"
            out.write_text(json.dumps(golden(path), indent=2, sort_keys=True) + "\n")
            print("wrote", out)


if __name__ == "__main__":
    main()
