"""Capture the real event streams the frontend's vitest tests read (``*.jsonl`` beside this file),
and the truths they are checked against (``*.truth.json``).

Each fixture runs one snippet through the real sandbox (``jaxscope.sandbox.worker.WorkerProcess``:
a spawned worker, the exhibit's probe, the supervisor's validation and ``seq`` numbering) and
writes one JSON event per line. The truth is computed here, in this process, with public JAX
only: ``jax.make_jaxpr`` (text, each eqn's primitive and snippet line from its traceback),
``jax.jit(f).lower`` (StableHLO), ``.compile()`` (``cost_analysis``, ``memory_analysis``) and the
outputs as numpy arrays; for the dataflow graph's inner jaxprs, each eqn's inner jaxprs read from
its params (``inner``); each eqn's name stack (``str(eqn.source_info.name_stack)``). Run from
the repository root (all fixtures, or the ones named):

    .venv/bin/python frontend/test-fixtures/capture.py [name ...]
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import json
import sys
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jaxscope.protocol import CallSpec, EventModel, RunOptions, RunRequest
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.sandbox.worker import WorkerProcess
from jaxscope.settings import Limits

HERE = Path(__file__).resolve().parent
# Copies of ../shared/cases (C17, C24) with their recorded expectations, so that a fresh clone
# can recapture and the tests can check against the cases.
CASES = HERE / "cases"

# name -> (exhibit, snippet file, extra calls)
FIXTURES: dict[str, tuple[str, Path, list[str]]] = {
    "tracing-where": ("tracing", HERE / "snippets" / "where_print.py", ["same", "shape", "dtype"]),
    "tracing-nested": ("tracing", HERE / "snippets" / "nested.py", []),
    "tracing-tracer-error": ("tracing", HERE / "snippets" / "tracer_if.py", []),
    "tracing-tracer-leak": ("tracing", HERE / "snippets" / "tracer_leak.py", []),
    "tracing-c17": ("tracing", CASES / "C17_print_broken.py", ["same"]),
    "stations-mlp": ("stations", HERE / "snippets" / "mlp_layer.py", []),
    "stations-nested": ("stations", HERE / "snippets" / "nested.py", []),
    "stations-c24": ("stations", CASES / "C24_async_dispatch.py", []),
    "tracing-graph-inner": ("tracing", HERE / "snippets" / "graph_inner.py", []),
    "tracing-graph-layers": ("tracing", HERE / "snippets" / "graph_layers.py", []),
    "tracing-graph-scopes": ("tracing", HERE / "snippets" / "graph_scopes.py", []),
    "tracing-graph-params": ("tracing", HERE / "snippets" / "graph_params.py", []),
    "tracing-graph-jit-scopes": ("tracing", HERE / "snippets" / "graph_jit_scopes.py", []),
    # 27 leaves called again, for the calls table's per-leaf diff: one grows, then all change dtype
    "tracing-params-calls": (
        "tracing",
        HERE / "snippets" / "graph_params.py",
        ["same", "shape", "dtype"],
    ),
}


async def capture(name: str, exhibit: str, snippet: Path, calls: list[str]) -> None:
    worker = await WorkerProcess.spawn(Limits(wall_s=60.0, cpu_s=60.0))
    events: list[EventModel] = []

    async def emit(event: EventModel) -> None:
        events.append(event)

    request = RunRequest(
        run_id=name,
        exhibit=exhibit,
        code=snippet.read_text(),
        options=RunOptions(calls=[CallSpec(change=c) for c in calls]),  # type: ignore[arg-type]
    )
    try:
        await worker.run(request, emit, cancel=asyncio.Event())
    finally:
        await worker.close()
    lines = [json.dumps(e.model_dump(mode="json")) for e in events]
    (HERE / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    print(f"{name}: {len(events)} events, last {events[-1].type}")


def _snippet_line(eqn: Any) -> int | None:
    """The innermost snippet line of an eqn's traceback (``Traceback.frames`` is public)."""
    for frame in eqn.source_info.traceback.frames:
        if frame.file_name == SNIPPET_FILENAME:
            return int(frame.line_num)
    return None


def _inner_jaxprs(eqn: Any) -> list[tuple[str, Any]]:
    """The jaxprs in an eqn's params, as (params key, Jaxpr), keys sorted and tuples in order
    (``branches``): ``ClosedJaxpr`` and ``Jaxpr`` told apart by their public attributes."""
    out: list[tuple[str, Any]] = []
    for key in sorted(eqn.params):
        value = eqn.params[key]
        for v in value if isinstance(value, tuple) else (value,):
            if hasattr(v, "jaxpr") and hasattr(v, "consts"):
                out.append((key, v.jaxpr))
            elif hasattr(v, "eqns") and hasattr(v, "invars"):
                out.append((key, v))
    return out


def _inner_tree(eqn: Any) -> dict[str, Any]:
    """An eqn as JAX holds it, with its inner jaxprs' eqns, all the way down."""
    return {
        "primitive": eqn.primitive.name,
        # relative to the jaxpr that holds it: JAX traces a jit's or scan's body under a new stack
        "name_stack": str(eqn.source_info.name_stack),
        "line": _snippet_line(eqn),
        "invars": len(eqn.invars),
        "literals": sum(1 for v in eqn.invars if hasattr(v, "val")),  # a Literal holds its value
        "out_types": [v.aval.str_short(short_dtypes=True) for v in eqn.outvars],
        "inner": [
            {
                "param": key,
                "constvars": len(j.constvars),
                "invars": len(j.invars),
                "outvars": len(j.outvars),
                "eqns": [_inner_tree(e) for e in j.eqns],
            }
            for key, j in _inner_jaxprs(eqn)
        ],
    }


def truth(snippet: Path) -> dict[str, Any]:
    """What JAX itself says about the snippet, computed in this process (no jaxscope code)."""
    s = load_snippet(snippet.read_text())
    out: dict[str, Any] = {}
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            closed = jax.make_jaxpr(s.f)(*s.args)
    except Exception as exc:
        return {"error_class": type(exc).__name__}
    out["trace_stdout"] = printed.getvalue()
    # each invar's leaf: f's parameter name and the leaf's keypath in that argument (public
    # jax.tree_util, not the jaxpr's debug info)
    params = list(inspect.signature(s.f).parameters)
    out["arg_keypaths"] = [
        f"{params[i]}{jax.tree_util.keystr(path)}"
        for i, a in enumerate(s.args)
        for path, _ in jax.tree_util.tree_flatten_with_path(a)[0]
    ]
    out["jaxpr_text"] = str(closed)
    out["eqns"] = [
        {
            "primitive": e.primitive.name,
            "line": _snippet_line(e),
            # JAX's name stack as it prints it (what the HLO op names carry after `jit(f)/`)
            "name_stack": str(e.source_info.name_stack),
        }
        for e in closed.jaxpr.eqns
    ]
    out["inner"] = [_inner_tree(e) for e in closed.jaxpr.eqns]
    out["invars"] = len(closed.jaxpr.invars)
    out["constvars"] = len(closed.jaxpr.constvars)
    out["outvars"] = len(closed.jaxpr.outvars)
    lowered = jax.jit(s.f).lower(*s.args)
    out["stablehlo"] = lowered.as_text()
    compiled = lowered.compile()
    cost = compiled.cost_analysis()
    out["cost"] = {k: float(v) for k, v in (cost or {}).items()}
    mem = compiled.memory_analysis()
    out["memory"] = {k: int(getattr(mem, k)) for k in dir(mem) if k.endswith("_in_bytes")}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            outputs = jax.tree.leaves(jax.jit(s.f)(*s.args))
    except Exception as exc:  # traced and lowered, but the call fails (a leaked tracer)
        out["call_error_class"] = type(exc).__name__
        out["call_error_message"] = str(exc)
        return out
    out["outputs"] = [
        {"shape": list(np.shape(x)), "dtype": str(np.asarray(x).dtype), "sum": float(np.sum(x))}
        for x in outputs
    ]
    return out


async def main(names: list[str]) -> None:
    for name, (exhibit, snippet, calls) in FIXTURES.items():
        if names and name not in names:
            continue
        await capture(name, exhibit, snippet, calls)
        (HERE / f"{name}.truth.json").write_text(json.dumps(truth(snippet), indent=1) + "\n")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
