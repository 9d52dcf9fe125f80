"""Regenerate ``exhibits/rules/golden/tables.json`` from plain JAX (never from the probe).

Records, after importing jax, jax.numpy, jax.scipy (and its submodules) and jax.nn: ``len()`` of
each of JAX's rule tables (``ad.primitive_jvps``, ``ad.fancy_transposes``,
``ad.primitive_transposes``, ``batching.fancy_primitive_batchers``, ``mlir._lowerings``,
``mlir._platform_specific_lowerings[platform]``), the names of the primitives with a rule in each
(sorted), and the primitives of the default example's jaxpr (``jax.make_jaxpr``), with the JAX
version. Run: ``.venv/bin/python exhibits/rules/golden/regen.py``.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import jax
import jax.nn
import jax.numpy
import jax.scipy
from jax._src.interpreters import ad, batching, mlir

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "tables.py"


def tables() -> dict[str, Any]:
    for sub in dir(jax.scipy):
        if not sub.startswith("_"):
            importlib.import_module(f"jax.scipy.{sub}")
    found: dict[str, Any] = {
        "ad.primitive_jvps": ad.primitive_jvps,
        "ad.fancy_transposes": ad.fancy_transposes,
        "ad.primitive_transposes": ad.primitive_transposes,
        "batching.fancy_primitive_batchers": batching.fancy_primitive_batchers,
        "mlir._lowerings": mlir._lowerings,
    }
    for platform, table in sorted(mlir._platform_specific_lowerings.items()):
        found[f"mlir._platform_specific_lowerings[{platform!r}]"] = table
    return found


def example_primitives() -> list[str]:
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(EXAMPLE.read_text(), "<snippet>", "exec"), namespace)
    closed = jax.make_jaxpr(namespace["f"])(*namespace["args"])
    names: list[str] = []

    def walk(jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            if eqn.primitive.name not in names:
                names.append(eqn.primitive.name)
            for value in eqn.params.values():
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    inner = getattr(item, "jaxpr", item)
                    if hasattr(inner, "eqns"):
                        walk(inner)

    walk(closed.jaxpr)
    return names


def main() -> None:
    found = tables()
    golden = {
        "jax_version": jax.__version__,
        "sizes": {name: len(table) for name, table in found.items()},
        "names": {name: sorted(str(p.name) for p in table) for name, table in found.items()},
        "example_primitives": example_primitives(),
    }
    (HERE / "tables.json").write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
