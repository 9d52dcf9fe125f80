"""The template exhibit's backend half: trace the snippet's ``f`` once with ``jax.make_jaxpr``
and report the avals it went in and came out with (``events.py``).

Runs inside the sandbox worker (``jaxscope.sandbox.probe_api``). Public JAX here; anything
private only through ``jaxscope.internals.api``. The imports of the exhibit's own modules are
relative, so that a copy of this folder under another name works unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

import jax
from jaxscope.exhibit_api import CallPlan, ProbeContext, aval_view, plan_call

from .events import TemplateAvalsRead, TemplateLeafAval


def leaf_paths(prefix: str, tree: Any) -> list[str]:
    """The key path of each leaf of ``tree`` in JAX's flattening order, after ``prefix``."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return [prefix + jax.tree_util.keystr(path) for path, _ in leaves]


def argument_paths(plan: CallPlan) -> list[str]:
    """The key paths of the traced arguments' leaves: the positional arguments that are not
    static, then the keyword arguments (the order ``make_jaxpr`` flattens them in)."""
    n = len(plan.args)
    static = {i % n for i in plan.static_argnums} if n else set()
    paths = [
        p for i, a in enumerate(plan.args) if i not in static for p in leaf_paths(f"args[{i}]", a)
    ]
    return paths + leaf_paths("kwargs", plan.kwargs)


def run(ctx: ProbeContext) -> None:
    """Trace ``f`` on ``args``; emit the input avals, then the output avals."""
    plan = plan_call(ctx.snippet)
    # The user's errors propagate: the runner reports them with the stage and the user's line.
    with ctx.stage("trace"):
        closed, out_shape = jax.make_jaxpr(
            plan.fun, static_argnums=plan.static_argnums, return_shape=True
        )(*plan.args, **plan.kwargs)
    ctx.emit(avals_read("in", argument_paths(plan), closed.in_avals))
    ctx.emit(avals_read("out", leaf_paths("out", out_shape), closed.out_avals))


def avals_read(side: Literal["in", "out"], paths: list[str], avals: list[Any]) -> TemplateAvalsRead:
    """The event of one side: each leaf's key path with its aval."""
    leaves = [
        TemplateLeafAval(path=p, aval=aval_view(a)) for p, a in zip(paths, avals, strict=True)
    ]
    return TemplateAvalsRead(side=side, leaves=leaves)
