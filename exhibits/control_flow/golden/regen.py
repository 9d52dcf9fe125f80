"""Regenerate ``exhibits/control_flow/golden/<example>.json`` from plain JAX (never from the
probe).

For each example: execute it under the file name ``<snippet>``, trace
``jax.make_jaxpr(f, static_argnums)(*args)`` and record either JAX's error (class and message) or
the jaxpr's text, the primitives of its top-level eqns, and for the first ``scan``/``while``/
``cond`` eqn its carry types (from the eqn's params) or each branch's output types, and the
output of ``jax.jit(f)(*args)`` (``tolist()``). Run: ``.venv/bin/python
exhibits/control_flow/golden/regen.py``.
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
    exec(compile(path.read_text(), "<snippet>", "exec"), namespace)
    return namespace


def short(aval: Any) -> str:
    return str(aval.str_short(short_dtypes=True))


def loop_types(eqn: Any) -> dict[str, Any]:
    """Carry / branch types read off a control-flow eqn's params (JAX's staged program)."""
    p = eqn.params
    name = eqn.primitive.name
    if name == "scan":
        j, nc, nk = p["jaxpr"], p["num_consts"], p["num_carry"]
        return {
            "primitive": name,
            "length": p["length"],
            "carry_in": [short(a) for a in j.in_avals[nc : nc + nk]],
            "carry_out": [short(a) for a in j.out_avals[:nk]],
        }
    if name == "while":
        j, nc = p["body_jaxpr"], p["body_nconsts"]
        return {
            "primitive": name,
            "carry_in": [short(a) for a in j.in_avals[nc:]],
            "carry_out": [short(a) for a in j.out_avals],
        }
    return {
        "primitive": name,
        "branch_out": [[short(a) for a in b.out_avals] for b in p["branches"]],
    }


def golden(path: Path) -> dict[str, Any]:
    ns = load(path)
    args = ns["args"] if isinstance(ns["args"], tuple) else (ns["args"],)
    static = ns.get("static_argnums", ())
    try:
        closed = jax.make_jaxpr(ns["f"], static_argnums=static)(*args)
    except Exception as exc:
        return {"ok": False, "error_class": type(exc).__name__, "message": str(exc)}
    out: dict[str, Any] = {
        "ok": True,
        "jaxpr": str(closed),
        "primitives": [e.primitive.name for e in closed.jaxpr.eqns],
    }
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive.name in ("scan", "while", "cond"):
            out["carry"] = loop_types(eqn)
            break
    value = jax.jit(ns["f"], static_argnums=static)(*args)
    out["out"] = [np.asarray(x).tolist() for x in jax.tree.leaves(value)]
    return out


def main() -> None:
    for path in EXAMPLES:
        data = golden(path)
        (HERE / f"{path.stem}.json").write_text(json.dumps(data, indent=1) + "\n")
        print(path.stem, "ok" if data["ok"] else data["error_class"])


if __name__ == "__main__":
    main()
