"""Regenerate ``exhibits/transform_order/golden/<example>.json`` from plain JAX (never from the
probe).

For each example of the exhibit (``examples/*.py``), executed under the file name ``<snippet>``:
the snippet's ``stack`` written out as JAX calls by :func:`direct` (outermost first; ``jvp`` and
``vjp`` as the exhibit defines them: w.r.t. the first argument, with ones as tangent/cotangent),
``vmap`` with the snippet's ``in_axes`` (default 0). Recorded: ``jaxpr`` =
``str(jax.make_jaxpr(composed)(*args))`` and ``result`` (each output leaf ``tolist()``), or
``error`` = ``"ErrorClass: message"`` when JAX rejects the stack.
Run: ``.venv/bin/python exhibits/transform_order/golden/regen.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent
EXAMPLES = sorted((HERE.parent / "examples").glob("*.py"))


def load(path: Path) -> dict[str, Any]:
    """Execute an example as a snippet would be (file name ``<snippet>``); its namespace."""
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def _ones(tree: Any) -> Any:
    return jax.tree.map(jnp.ones_like, tree)


def direct(stack: list[str], f: Callable[..., Any], in_axes: Any = 0) -> Callable[..., Any]:
    """The stack as plain JAX calls, written out one by one (independent of the probe)."""
    g = f
    for name in reversed(stack):
        h = g
        if name == "jit":
            g = jax.jit(h)
        elif name == "grad":
            g = jax.grad(h)
        elif name == "value_and_grad":
            g = jax.value_and_grad(h)
        elif name == "vmap":
            g = jax.vmap(h, in_axes=in_axes)
        elif name == "jacfwd":
            g = jax.jacfwd(h)
        elif name == "jacrev":
            g = jax.jacrev(h)
        elif name == "hessian":
            g = jax.hessian(h)
        elif name == "jvp":

            def g(*a: Any, h: Callable[..., Any] = h) -> Any:
                return jax.jvp(lambda a0: h(a0, *a[1:]), (a[0],), (_ones(a[0]),))

        elif name == "vjp":

            def g(*a: Any, h: Callable[..., Any] = h) -> Any:
                out, pullback = jax.vjp(lambda a0: h(a0, *a[1:]), a[0])
                return out, pullback(_ones(out))[0]

        else:
            raise ValueError(name)
    return g


def golden(ns: dict[str, Any], stack: list[str] | None = None) -> dict[str, Any]:
    """The golden record of one example (``stack`` overrides the snippet's)."""
    stack = list(ns.get("stack", ["vmap", "grad"]) if stack is None else stack)
    args = tuple(ns["args"])
    g = direct(stack, ns["f"], ns.get("in_axes", 0))
    try:
        text = str(jax.make_jaxpr(g)(*args))
        out = g(*args)
    except Exception as exc:
        return {"stack": stack, "error": f"{type(exc).__name__}: {exc}"}
    result = [np.asarray(leaf).tolist() for leaf in jax.tree.leaves(out)]
    return {"stack": stack, "jaxpr": text, "result": result}


def main() -> None:
    for path in EXAMPLES:
        data = golden(load(path))
        (HERE / f"{path.stem}.json").write_text(json.dumps(data, indent=1) + "\n")
        print("wrote", path.stem, "error" in data)


if __name__ == "__main__":
    main()
