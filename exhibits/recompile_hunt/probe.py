"""The recompile_hunt exhibit's probe: run the user's training loop for N steps under
monitoring and report, per step, whether JAX compiled, how long the step took, and why it
compiled (a structured diff of what JAX keyed on, against the closest earlier key).

Snippet convention (as the cache cases): ``f`` is the driver that runs the loop, called as
``f(*args)``; ``args = (n,)`` with ``n`` the number of steps (``RunOptions.steps`` replaces it
when ``args`` is one int). A step is one top-level call of the snippet's ``step`` (jitted or
not: everything JAX compiles while it runs belongs to the step); a snippet without ``step``
counts every top-level call of a jitted function as a step (C05's ``jax.jit`` in a loop).
Each run starts from clean caches (``jax.clear_caches()`` and the explainer's call sites).
"""

from __future__ import annotations

from typing import Any

from jaxscope.internals.recompiles import (
    Diagnosis,
    KeyRecord,
    StepRecord,
    Watch,
    diagnose,
    watching,
)
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import StepCompileView, TrainingStepObserved
from jaxscope.sandbox.probe_api import ProbeContext


def _args(ctx: ProbeContext) -> tuple[Any, ...]:
    args = ctx.snippet.args
    steps = ctx.options.steps
    if steps is not None and len(args) == 1 and isinstance(args[0], int):
        return (steps,)
    return args


def _compile_views(step: StepRecord, diagnoses: dict[int, Diagnosis]) -> list[StepCompileView]:
    """One view per XLA compilation in the step; user compilations carry their diagnosis."""
    views: list[StepCompileView] = []
    user = [k for k in step.keys if k.compiled]
    for rec in user:
        d = diagnoses[rec.seq]
        views.append(
            StepCompileView(
                function=rec.fun_name,
                fun_name=f"jit({rec.fun_name})",
                user=True,
                kind=d.kind,
                cause=d.cause,
                fix=d.fix,
                source=rec.call_site,
                defined_line=rec.defined_line,
                timers_ms=dict(rec.timers_ms),
            )
        )
    # Compilations of JAX-internal programs (eager operations run outside jit, in the step).
    user_names = [f"jit({r.fun_name})" for r in user]
    for fun_name, ms in step.compiles:
        if fun_name in user_names:
            user_names.remove(fun_name)
            continue
        views.append(
            StepCompileView(
                function=fun_name,
                fun_name=fun_name,
                user=False,
                kind="eager",
                cause=f"JAX compiled {fun_name}, an operation run outside jit during the step",
                fix="Move the operation into the jitted step.",
                timers_ms={"compile": ms},
            )
        )
    return views


def run(ctx: ProbeContext) -> None:
    """Run the loop under watch, then emit one ``training_step_observed`` per step."""
    snippet = ctx.snippet
    args = _args(ctx)
    # The driver looks ``step`` up in its module's globals (``Snippet.namespace`` is a copy).
    namespace: dict[str, Any] = getattr(snippet.f, "__globals__", snippet.namespace)
    held: list[tuple[Watch, str]] = []
    try:
        with watching(namespace) as (watch, watched), ctx.stage("run"):
            held.append((watch, watched))
            snippet.f(*args, **snippet.kwargs)
    finally:  # the steps that ran are reported also when the loop raises (then run_failed)
        for watch, watched in held:
            _emit_steps(ctx, watch, watched)


def _emit_steps(ctx: ProbeContext, watch: Watch, watched: str) -> None:
    """One ``training_step_observed`` per step, each compile diagnosed against earlier keys."""
    diagnoses: dict[int, Diagnosis] = {}
    earlier: list[KeyRecord] = []
    for rec in watch.records:
        if rec.compiled:
            diagnoses[rec.seq] = diagnose(rec, earlier)
        earlier.append(rec)

    for step in watch.steps:
        compiles = _compile_views(step, diagnoses)
        first = next((k for k in step.keys if k.compiled), None)
        d = diagnoses[first.seq] if first is not None else None
        closed = first.closed_jaxpr() if first is not None else None
        explanation = "\n".join(dict.fromkeys(step.explain))
        ctx.emit(
            TrainingStepObserved(
                step=step.index,
                compiled=bool(step.compiles),
                duration_ms=step.duration_ms,
                cause=d.cause if d else (compiles[0].cause if compiles else None),
                source=first.call_site if first else None,
                fix=d.fix if d else (compiles[0].fix if compiles else None),
                kind=d.kind if d else (compiles[0].kind if compiles else None),
                function=first.fun_name if first else None,
                defined_line=first.defined_line if first else None,
                compared_step=d.closest.step if d and d.closest else None,
                entries=d.entries if d else [],
                compiles=compiles,
                explanation=explanation,
                log=list(step.log),
                jaxpr=jaxpr_view(closed) if closed is not None else None,
                watched=watched,
            )
        )
