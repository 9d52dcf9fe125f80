"""Write ``named-jaxprs.json``: real jaxprs whose text JAX 0.10.2 prints with named jaxprs first
(``let g = { lambda ... } in`` for an inner jaxpr used twice or of more than 10 eqns, then the
top-level ``{ lambda ; ... let``), each as its :class:`JaxprView` and the truth read from
``str(closed_jaxpr)`` and the jaxpr object here. Run from the repository root:

    .venv/bin/python frontend/test-fixtures/named-jaxprs.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from jaxscope.internals.views import jaxpr_view


def g(x: Any) -> Any:
    """Calls ``jnp.take`` twice (a shared ``_take``) and has more than 10 eqns (a named ``g``)."""
    i = jnp.array([0, 1])
    y = jnp.take(x, i, axis=0) * jnp.take(x, i, axis=0)
    for _ in range(6):
        y = jnp.sin(y) + 1.0
    return jnp.sum(y)


def outer(x: Any) -> Any:
    """``jit(g)`` twice: the named ``g`` is called by two top-level eqns."""
    f = jax.jit(g)
    return f(x) + f(x)


def case(fn: Any) -> dict[str, Any]:
    closed = jax.make_jaxpr(fn)(jnp.ones((3, 4), jnp.float32))
    text = str(closed)
    lines = text.split("\n")
    top = next(i for i, line in enumerate(lines) if line.startswith("{ lambda "))
    return {
        "view": jaxpr_view(closed).model_dump(mode="json"),
        "truth": {
            "text": text,
            "top_lambda_line": top,
            "named": [line.split(" ")[1] for line in lines[:top] if line.startswith("let ")],
            "primitives": [str(e.primitive) for e in closed.jaxpr.eqns],
        },
    }


if __name__ == "__main__":
    out = {"jit_g": case(jax.jit(g)), "outer": case(outer)}
    Path(__file__).with_name("named-jaxprs.json").write_text(json.dumps(out, indent=1) + "\n")
