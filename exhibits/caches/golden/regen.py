"""Regenerate ``exhibits/caches/golden/<example>.json`` from plain JAX (never from the probe).

The replay uses public signals only: ``jax.monitoring`` duration events (trace
``/jax/core/compile/jaxpr_trace_duration``, lower ``.../jaxpr_to_mlir_module_duration``, compile
``.../backend_compile_duration``), the jit object's C++ cache size (``jitted._cache_size()``) and
JAX's explain-cache-miss log. For a ``calls`` example, per call, the layer implied by them:

* nothing reported and the C++ cache did not grow: ``cpp``;
* not lowered (traced or not): ``lowering``, the deepest cache that answered (when nothing was
  traced either and the C++ cache grew, the jaxpr cache hit first, then the lowering cache);
* lowered but not compiled: ``executable``;
* compiled: ``compile`` (the persistent cache is off in these examples).

For a driver example (``f(*args)`` calls jitted functions itself): traces and compiles per
function name (functions defined in the snippet only; JAX's internal jits are left out).

Run: ``.venv/bin/python exhibits/caches/golden/regen.py``.
"""

from __future__ import annotations

import json
import logging
import sys
import types
from pathlib import Path
from typing import Any

import jax
import jax.monitoring

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"

TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE = "/jax/core/compile/backend_compile_duration"


def load(source: str) -> dict[str, Any]:
    """Execute a snippet as jaxscope does (file name ``<snippet>``, a real module)."""
    module = types.ModuleType("snippet")
    module.__file__ = "<snippet>"
    sys.modules["snippet"] = module
    exec(compile(source, "<snippet>", "exec"), module.__dict__)
    return module.__dict__


def snippet_function_names(source: str) -> set[str]:
    """Names of every function defined in the snippet (lambdas are ``<lambda>``)."""
    names: set[str] = set()

    def walk(code: types.CodeType) -> None:
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names.add(const.co_name)
                walk(const)

    walk(compile(source, "<snippet>", "exec"))
    return names


class Events:
    """Monitoring duration events, as ``(event, fun_name)``, while registered."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, event: str, duration_secs: float, **kwargs: str | int) -> None:
        del duration_secs
        if event in (TRACE, LOWER, COMPILE):
            self.seen.append((event, str(kwargs.get("fun_name"))))


class Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def replay_calls(jitted: Any, calls: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Each call once, in order, from ``jax.clear_caches()``: the layer implied by the public
    signals, and JAX's explain messages (``TRACING CACHE MISS`` lines) for it."""
    jax.clear_caches()  # type: ignore[no-untyped-call]
    name = jitted.__wrapped__.__name__
    out = []
    logger = logging.getLogger("jax._src.interpreters.partial_eval")
    for args in calls:
        events = Events()
        handler = Messages()
        logger.addHandler(handler)
        jax.monitoring.register_event_duration_secs_listener(events)
        size = jitted._cache_size()
        with jax.explain_cache_misses(True):
            jax.block_until_ready(jitted(*args))  # type: ignore[no-untyped-call]
        grew = jitted._cache_size() > size
        jax.monitoring.unregister_event_duration_listener(events)
        logger.removeHandler(handler)
        traced = (TRACE, name) in events.seen
        lowered = (LOWER, f"jit({name})") in events.seen
        compiled = (COMPILE, f"jit({name})") in events.seen
        if compiled:
            layer = "compile"
        elif lowered:
            layer = "executable"
        elif traced or grew:
            layer = "lowering"
        else:
            layer = "cpp"
        out.append(
            {
                "layer": layer,
                "traced": traced,
                "compiled": compiled,
                "explained": any(m.startswith("TRACING CACHE MISS") for m in handler.messages),
            }
        )
    return out


def replay_driver(source: str, ns: dict[str, Any]) -> dict[str, Any]:
    """Run ``f(*args)`` from ``jax.clear_caches()``: traces and compiles per snippet function."""
    jax.clear_caches()  # type: ignore[no-untyped-call]
    names = snippet_function_names(source)
    events = Events()
    jax.monitoring.register_event_duration_secs_listener(events)
    try:
        returned = ns["f"](*ns["args"], **ns.get("kwargs", {}))
        jax.block_until_ready(returned)  # type: ignore[no-untyped-call]
    finally:
        jax.monitoring.unregister_event_duration_listener(events)
    traces: dict[str, int] = {}
    compiles: dict[str, int] = {}
    for event, fun_name in events.seen:
        if event == TRACE and fun_name in names:
            traces[fun_name] = traces.get(fun_name, 0) + 1
        if event == COMPILE and fun_name.startswith("jit(") and fun_name[4:-1] in names:
            compiles[fun_name[4:-1]] = compiles.get(fun_name[4:-1], 0) + 1
    return {"traces_by_function": traces, "compiles_by_function": compiles}


def golden(source: str) -> dict[str, Any]:
    """What plain JAX says about an example (calls or driver)."""
    ns = load(source)
    if "calls" in ns:
        fun = ns["f"]
        jitted = jax.jit(
            fun,
            static_argnums=ns.get("static_argnums", ()),
            static_argnames=ns.get("static_argnames", ()),
        )
        return {"mode": "calls", "calls": replay_calls(jitted, [tuple(c) for c in ns["calls"]])}
    return {"mode": "driver", **replay_driver(source, ns)}


def main() -> None:
    for path in sorted(EXAMPLES.glob("*.py")):
        data = golden(path.read_text())
        (HERE / f"{path.stem}.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        print(path.stem, json.dumps(data)[:160])


if __name__ == "__main__":
    main()
