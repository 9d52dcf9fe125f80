"""Which transforms' tracers reached a function: the nest of tracers in its arguments.

When JAX transforms a function, each transform's trace hands the function tracers of its own
class, and a tracer of an inner transform wraps the values of the outer ones:

* ``jax._src.interpreters.ad.JVPTracer`` (``jax.jvp``, ``jax.jacfwd``) and
  ``jax._src.interpreters.ad.LinearizeTracer`` (``jax.grad``/``jax.vjp``/``jax.jacrev``: reverse
  mode linearizes first) carry ``primal`` and ``tangent``;
* ``jax._src.interpreters.batching.BatchTracer`` (``jax.vmap``) carries ``val`` (the whole
  batch) and ``batch_dim``;
* ``jax._src.interpreters.partial_eval.DynamicJaxprTracer`` (``jax.jit``, ``jax.make_jaxpr``, the
  tangent side of linearize) stages ops into a jaxpr: it wraps nothing.

:func:`tracer_nest` walks these attributes (private fields, checked by
``backend/tests/test_internals_contract_traces.py``) from the argument ``f`` received down to
concrete arrays; :func:`observing` wraps ``f`` so that its first call records the nest of every
argument leaf. Nothing here changes what JAX computes: ``f`` is called with the same values.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
from jax._src import core, source_info_util
from jax._src.interpreters import ad, batching

from jaxscope.internals.views import aval_view

source_info_util.register_exclusion(__file__)

# What a node of the tracer nest is to the one above it (the wire's ``TraceRole`` of
# ``exhibits/transform_order/events.py``, which the contract test holds equal).
TraceRole = Literal["argument", "primal", "tangent", "val"]


@dataclass(frozen=True)
class TraceNode:
    """One value in the nest of tracers that reached ``f``: ``depth`` 0 is the argument, its
    children the values its tracer wraps (``role``); ``tracer`` its class name, ``trace`` its
    trace's (``None`` for a concrete array), ``aval`` the short aval at this level,
    ``batch_dim`` a ``BatchTracer``'s, ``transform`` the transform that creates such a trace,
    in words. The transform_order probe makes its ``TraceNodeView`` of it (design 0059: the
    walker returns records, the exhibit builds its events)."""

    depth: int
    role: TraceRole
    tracer: str
    trace: str | None
    aval: str
    batch_dim: int | None
    transform: str | None


@dataclass(frozen=True)
class ArgTrace:
    """The nest of one argument leaf (``path``: its key path, led by the parameter's name),
    depth-first."""

    path: str
    nodes: list[TraceNode]


# The attributes through which a tracer of each class wraps the values of outer transforms.
WRAPPED: dict[type, tuple[TraceRole, ...]] = {
    ad.JVPTracer: ("primal", "tangent"),
    ad.LinearizeTracer: ("primal", "tangent"),
    batching.BatchTracer: ("val",),
}

# Which transform (chip) creates each trace class, in words (see the module docstring).
TRANSFORM_OF_TRACE: dict[str, str] = {
    "BatchTrace": "vmap (also the batched tangents of jacfwd/hessian)",
    "JVPTrace": "jvp / jacfwd (forward mode)",
    "LinearizeTrace": "grad / value_and_grad / vjp / jacrev (reverse mode linearizes first)",
    "DynamicJaxprTrace": "jit / make_jaxpr (staged into a jaxpr)",
}

# Longest nest recorded per leaf and most argument leaves recorded (the view stays small).
MAX_NODES = 24
MAX_LEAVES = 8


def _aval_text(value: Any) -> str:
    try:
        return aval_view(jax.typeof(value)).short
    except Exception:  # a Python scalar or an object JAX has no aval for
        return type(value).__name__


def tracer_nest(value: Any) -> list[TraceNode]:
    """The nest of tracers in ``value`` (an argument leaf ``f`` received), depth-first: the
    value itself (depth 0), then each wrapped value (``primal``, ``tangent``, ``val``)."""
    nodes: list[TraceNode] = []

    def walk(v: Any, depth: int, role: TraceRole) -> None:
        if len(nodes) >= MAX_NODES:
            return
        trace = getattr(v, "_trace", None) if isinstance(v, core.Tracer) else None
        trace_name = type(trace).__name__ if trace is not None else None
        bdim = getattr(v, "batch_dim", None) if isinstance(v, batching.BatchTracer) else None
        nodes.append(
            TraceNode(
                depth=depth,
                role=role,
                tracer=type(v).__name__,
                trace=trace_name,
                aval=_aval_text(v),
                batch_dim=bdim if isinstance(bdim, int) else None,
                transform=TRANSFORM_OF_TRACE.get(trace_name) if trace_name else None,
            )
        )
        for attr in WRAPPED.get(type(v), ()):
            inner = getattr(v, attr, None)
            if inner is None or isinstance(inner, ad.Zero):
                continue
            walk(inner, depth + 1, attr)

    walk(value, 0, "argument")
    return nodes


@dataclass(frozen=True)
class PerExample:
    """A value ``f`` sees as one example of a ``jax.vmap`` batch: the ``BatchTracer``'s
    ``batch_dim`` and the shape of the whole batch it carries (``val``)."""

    batch_dim: int
    full_shape: tuple[int, ...]


def per_example(value: Any) -> PerExample | None:
    """``value``'s batch axis and whole shape when it is a ``BatchTracer`` (``jax.vmap``), or a
    JVP/linearize tracer whose primal is one (``vmap(grad(f))``), with an integer batch dim;
    else None (a concrete array, a value ``jax.vmap`` does not map, a ``jit`` inside the
    ``vmap``: its tracers are per-example jaxpr tracers)."""
    v = value
    for _ in range(MAX_NODES):
        if isinstance(v, batching.BatchTracer):
            bdim = v.batch_dim
            shape = getattr(v.val, "shape", None)
            if not isinstance(bdim, int) or shape is None:
                return None
            full = tuple(shape)
            if not all(isinstance(d, int) for d in full) or not 0 <= bdim < len(full):
                return None
            return PerExample(bdim, full)
        if isinstance(v, ad.JVPTracer | ad.LinearizeTracer):
            v = v.primal
            continue
        return None
    return None


@dataclass
class Observation:
    """What :func:`observing` saw: the nest of each argument leaf on ``f``'s first call (the
    first :data:`MAX_LEAVES`; ``left_out`` counts the leaves after them)."""

    calls: int = 0
    args: list[ArgTrace] = field(default_factory=list)
    left_out: int = 0


def _positional_names(f: Callable[..., Any]) -> list[str]:
    """The names of ``f``'s positional parameters (``[]`` when Python cannot say)."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]


def _named(path: str, names: list[str]) -> str:
    """``[1]['w']`` -> ``x['w']`` when the second positional parameter is ``x``."""
    if path.startswith("["):
        head, _, rest = path[1:].partition("]")
        if head.isdigit() and int(head) < len(names):
            return names[int(head)] + rest
    return path


def observing(f: Callable[..., Any]) -> tuple[Callable[..., Any], Observation]:
    """A fresh wrapper of ``f`` (a new function object, so no JAX cache holds a trace of it)
    that records, on its first call, the tracer nest of every positional argument leaf; each
    leaf's path starts with the parameter's name (``w``, ``x['b']``) where ``f`` has one."""
    seen = Observation()
    names = _positional_names(f)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if seen.calls == 0:
            leaves = jax.tree_util.tree_flatten_with_path(args)[0]
            seen.left_out = max(0, len(leaves) - MAX_LEAVES)
            leaves = leaves[:MAX_LEAVES]
            seen.args = [
                ArgTrace(path=_named(jax.tree_util.keystr(path), names), nodes=tracer_nest(leaf))
                for path, leaf in leaves
            ]
        seen.calls += 1
        return f(*args, **kwargs)

    return wrapper, seen


# A bound on what count_eqns reports (a jaxpr that calls a shared body from many nested places
# multiplies out; the limits reach their ceiling long before this).
MAX_COUNTED_EQNS = 10_000_000


def count_eqns(jaxpr: core.Jaxpr) -> int:
    """Eqns of ``jaxpr``, those of its inner jaxprs (``pjit``, ``scan``, ``cond``... params,
    ``core.jaxprs_in_params``) included, counted at each eqn that holds one: a model under one
    ``jit`` is a 1-eqn jaxpr whose compile is that of all its inner eqns. A scan body counts
    once (not once per iteration). Each distinct jaxpr is walked once (a body shared by nested
    calls would otherwise be walked once per path); the count stops at
    :data:`MAX_COUNTED_EQNS`."""
    totals: dict[int, int] = {}

    def total(j: core.Jaxpr) -> int:
        known = totals.get(id(j))
        if known is not None:
            return known
        n = len(j.eqns)
        for eqn in j.eqns:
            for inner in core.jaxprs_in_params(eqn.params):
                n = min(n + total(inner), MAX_COUNTED_EQNS)
        totals[id(j)] = n
        return n

    return total(jaxpr)


__all__ = [
    "TRANSFORM_OF_TRACE",
    "WRAPPED",
    "ArgTrace",
    "Observation",
    "TraceNode",
    "TraceRole",
    "count_eqns",
    "observing",
    "tracer_nest",
]
