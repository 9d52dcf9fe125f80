"""The sharding annotations inside ``f``: each ``with_sharding_constraint`` and ``device_put``
to a ``Sharding`` in its jaxpr, with the user's line, the requested sharding and the value's
type, and whether the annotated value is one of ``f``'s outputs as it is.

JAX records them as ``sharding_constraint`` eqns (param ``sharding``) and ``device_put`` eqns
(param ``devices``, one per operand). Calls (``jit``, ``closed_call``, custom rules, ``remat``)
are read with their bodies inlined, so a constraint inside a jitted helper counts, and its
output maps back to ``f``'s. What the compiler then does with them is the probe's business
(``Compiled.output_shardings``, no private JAX needed there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jax._src import core
from jax.sharding import Sharding

from jaxscope.internals.dtype_changes import flatten_calls
from jaxscope.internals.views import snippet_source
from jaxscope.protocol import SourceLoc


@dataclass(frozen=True)
class ShardingAnnotation:
    """One annotation: ``primitive`` (``sharding_constraint`` or ``device_put``), the user's
    line (``source``), the requested ``sharding`` (a ``jax.sharding.Sharding``), the annotated
    value's ``shape`` and ``dtype`` name, ``output_index``: the index of ``f``'s (flat)
    output that is this very value, ``None`` when later eqns compute from it instead, and
    ``in_jit``: whether the eqn lies inside a ``jit`` call of the jaxpr (``f`` itself decorated
    with ``jax.jit``, or a jitted function it calls): then ``f`` as the user calls it runs the
    annotation compiled, not eagerly."""

    primitive: str
    source: SourceLoc | None
    sharding: Any
    shape: tuple[int, ...]
    dtype: str
    output_index: int | None
    in_jit: bool = False


def sharding_annotations(closed_jaxpr: core.ClosedJaxpr) -> list[ShardingAnnotation]:
    """The annotations of ``closed_jaxpr`` in eqn order (calls inlined)."""
    jaxpr = closed_jaxpr.jaxpr
    env: dict[Any, object | None] = {v: v for v in jaxpr.invars}
    flat = flatten_calls(jaxpr, env)
    outs = [None if isinstance(v, core.Literal) else env.get(v) for v in jaxpr.outvars]
    found: list[ShardingAnnotation] = []
    for item in flat:
        eqn = item.eqn
        name = eqn.primitive.name
        if name == "sharding_constraint":
            pairs = [(eqn.params.get("sharding"), 0)]
        elif name == "device_put":
            pairs = [(d, i) for i, d in enumerate(eqn.params.get("devices", ()))]
        else:
            continue
        for sharding, i in pairs:
            if not isinstance(sharding, Sharding) or i >= len(eqn.outvars):
                continue
            out: Any = eqn.outvars[i]
            key = item.outs[i]
            aval: Any = out.aval
            index = next((j for j, k in enumerate(outs) if k is key), None)
            found.append(
                ShardingAnnotation(
                    primitive=name,
                    source=snippet_source(eqn.source_info.traceback),
                    sharding=sharding,
                    shape=tuple(int(d) for d in aval.shape),
                    dtype=str(aval.dtype.name),
                    output_index=index,
                    in_jit="jit" in item.calls or "pjit" in item.calls,
                )
            )
    return found
