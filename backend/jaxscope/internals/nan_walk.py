"""The forward side of a NaN found in the backward pass (nan_finder exhibit).

The transpose walk (``jaxscope.internals.transpose_walk``) names the primal primitive whose JVP
emitted the linear eqn where a cotangent first became NaN or Inf, and that eqn's user frame. This
module finds the same primal eqn in ``jax.make_jaxpr(fun)(*args)`` (same primitive name, same
user frame: line, column, end line and end column, from ``eqn.source_info``) and evaluates the
primal jaxpr on the concrete arguments up to it, eqn by eqn with ``eqn.primitive.bind`` (as
``jax.core.eval_jaxpr`` does), to give that eqn's forward output. So the exhibit can say whether
the forward value was already NaN/Inf (what ``jax_debug_nans`` stops at) or only the cotangent.

Top-level eqns are searched, and the bodies of ``jit`` eqns (a jitted helper of the user's: the
nan_finder descends into its backward pass too): the body is evaluated on the ``jit`` eqn's
inputs, up to the eqn. An eqn that is not found, or whose user frame matches several eqns (a
Python loop, a helper called twice), gives ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax._src import core, source_info_util

from jaxscope.internals.views import snippet_source
from jaxscope.protocol import SourceLoc

source_info_util.register_exclusion(__file__)


def _same_frame(a: SourceLoc | None, b: SourceLoc) -> bool:
    return a is not None and (a.line, a.column, a.end_line, a.end_column) == (
        b.line,
        b.column,
        b.end_line,
        b.end_column,
    )


def primal_output(
    fun: Callable[..., Any], args: Sequence[Any], primitive: str, source: SourceLoc
) -> Any | None:
    """The output (the first outvar's value) at ``args`` of the unique eqn of
    ``jax.make_jaxpr(fun)(*args)`` (top level, or in the body of a ``jit`` eqn) whose primitive
    is ``primitive`` and whose user frame is ``source``; ``None`` when there is no such eqn or
    more than one."""
    closed = jax.make_jaxpr(fun)(*args)

    def direct(eqn: core.JaxprEqn) -> bool:
        return eqn.primitive.name == primitive and _same_frame(
            snippet_source(eqn.source_info.traceback), source
        )

    def body(eqn: core.JaxprEqn) -> core.ClosedJaxpr | None:
        inner = eqn.params.get("jaxpr") if eqn.primitive.name == "jit" else None
        return inner if isinstance(inner, core.ClosedJaxpr) else None

    def count(jaxpr: core.Jaxpr) -> int:
        n = 0
        for eqn in jaxpr.eqns:
            inner = body(eqn)
            n += 1 if direct(eqn) else count(inner.jaxpr) if inner is not None else 0
        return n

    if count(closed.jaxpr) != 1:
        return None

    def run(closed: core.ClosedJaxpr, inputs: Sequence[Any]) -> Any:
        jaxpr = closed.jaxpr
        env: dict[Any, Any] = {}
        env.update(zip(jaxpr.constvars, closed.consts, strict=True))
        env.update(zip(jaxpr.invars, inputs, strict=True))

        def read(v: Any) -> Any:
            return v.val if isinstance(v, core.Literal) else env[v]

        for eqn in jaxpr.eqns:
            inner = body(eqn)
            if inner is not None and not direct(eqn) and count(inner.jaxpr) == 1:
                return run(inner, [read(v) for v in eqn.invars])
            params = eqn.primitive.get_bind_params(eqn.params)
            with eqn.ctx.manager:
                ans = eqn.primitive.bind(*map(read, eqn.invars), **params)
            outs = ans if eqn.primitive.multiple_results else [ans]
            env.update(zip(eqn.outvars, outs, strict=True))
            if direct(eqn):
                return outs[0]
        return None  # pragma: no cover - count() found it

    return run(closed, jax.tree.leaves(tuple(args)))
