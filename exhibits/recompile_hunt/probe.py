"""The recompile_hunt exhibit's probe: run the user's training loop for N steps under
monitoring and report, per step, whether JAX compiled, how long the step took, and why it
compiled (a structured diff of what JAX keyed on, against the closest earlier key).

Snippet convention (as the cache cases): ``f`` is the driver that runs the loop, called as
``f(*args)``; ``args = (n,)`` with ``n`` the number of steps (``RunOptions.steps`` replaces it
when ``args`` is one int). A step is one top-level call of the snippet's ``step`` (jitted or
not: everything JAX compiles while it runs belongs to the step); a snippet without ``step``
counts every top-level call of a jitted function as a step (C05's ``jax.jit`` in a loop).
Each run starts from clean caches (``jax.clear_caches()`` and the explainer's call sites).
Each step's event is emitted as the step finishes; the loop is stopped at the first step that
would start after :data:`TIME_BUDGET_S` seconds, or after :data:`MAX_STEPS` steps (a driver
that ignores ``n``), then ``training_stopped`` says which.
"""

from __future__ import annotations

from typing import Any

from jaxscope.exhibit_api import (
    BudgetReached,
    Diagnosis,
    KeyRecord,
    ProbeContext,
    RecompileStepRecord,
    Watch,
    diagnose,
    jaxpr_view,
    options_as,
    watching,
)

from exhibits.caches.events import KeyEntryDiff
from exhibits.recompile_hunt.events import StepCompileView, TrainingStepObserved, TrainingStopped

from .options import RecompileHuntOptions

# Wall-clock seconds the watched loop may run before the next step stops it. The run's wall
# limit is the runner's ``wall_s`` (10 s) times the exhibit's budget (3): 200 steps that each
# compile (fresh_closure) take about 29 s here, so the loop stops well inside it, leaving time
# for the worker's start and the events.
TIME_BUDGET_S = 12.0
# The most steps watched (``RunOptions.steps`` allows as many): a driver that calls ``step``
# more often (``for i in range(10**9)``) is stopped at the next call.
MAX_STEPS = 200


def _args(ctx: ProbeContext) -> tuple[Any, ...]:
    args = ctx.snippet.args
    steps = options_as(ctx.options, RecompileHuntOptions).steps
    if steps is not None and len(args) == 1 and isinstance(args[0], int):
        return (steps,)
    return args


def _requested_n(args: tuple[Any, ...]) -> int | None:
    """The ``n`` of ``f(n)``: the single int argument the driver was called with, else None."""
    if len(args) == 1 and isinstance(args[0], int) and not isinstance(args[0], bool):
        return int(args[0])
    return None


def _compile_views(
    step: RecompileStepRecord, diagnoses: dict[int, Diagnosis]
) -> list[StepCompileView]:
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
    """Run the loop under watch, emitting one ``training_step_observed`` as each step finishes
    (a run that times out keeps the steps it streamed); after :data:`TIME_BUDGET_S` seconds or
    :data:`MAX_STEPS` steps the next step stops the loop and ``training_stopped`` says so."""
    snippet = ctx.snippet
    args = _args(ctx)
    # The driver looks ``step`` up in its module's globals (``Snippet.namespace`` is a copy).
    namespace: dict[str, Any] = getattr(snippet.f, "__globals__", snippet.namespace)
    emitter = _StepEmitter(ctx)
    try:
        with (
            watching(namespace, MAX_STEPS, on_step=emitter.step_done, budget_s=TIME_BUDGET_S) as (
                watch,
                watched,
            ),
            ctx.stage("run"),
        ):
            emitter.watch, emitter.watched = watch, watched
            snippet.f(*args, **snippet.kwargs)
    except BudgetReached as stop:
        ctx.emit(
            TrainingStopped(
                steps_run=stop.steps_run,
                budget_s=TIME_BUDGET_S,
                elapsed_s=stop.elapsed_s,
                max_steps=stop.max_steps,
                requested_n=_requested_n(args),
            )
        )


class _StepEmitter:
    """Emits each finished step, its compiles diagnosed against the keys of earlier steps (a
    step's keys are complete when it returns: JAX traces, lowers and compiles inside the call)."""

    def __init__(self, ctx: ProbeContext) -> None:
        self.ctx = ctx
        self.watch: Watch | None = None
        self.watched = ""
        self.diagnoses: dict[int, Diagnosis] = {}
        self.earlier: list[KeyRecord] = []

    def step_done(self, step: RecompileStepRecord) -> None:
        assert self.watch is not None
        for rec in self.watch.records[len(self.earlier) :]:
            if rec.compiled:
                self.diagnoses[rec.seq] = diagnose(rec, self.earlier)
            self.earlier.append(rec)
        self.ctx.emit(_step_event(step, self.diagnoses, self.watched))


def _step_event(
    step: RecompileStepRecord, diagnoses: dict[int, Diagnosis], watched: str
) -> TrainingStepObserved:
    """One ``training_step_observed``: the step's compiles, the first user compile's diagnosis."""
    compiles = _compile_views(step, diagnoses)
    first = next((k for k in step.keys if k.compiled), None)
    d = diagnoses[first.seq] if first is not None else None
    closed = first.closed_jaxpr() if first is not None else None
    explanation = "\n".join(dict.fromkeys(step.explain))
    return TrainingStepObserved(
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
        entries=[KeyEntryDiff.model_validate(e, from_attributes=True) for e in d.entries]
        if d
        else [],
        compiles=compiles,
        explanation=explanation,
        log=list(step.log),
        jaxpr=jaxpr_view(closed) if closed is not None else None,
        watched=watched,
    )


# This probe calls the snippet's f as it is (its loop runs as a script runs it): the runner's
# plain call of an f that donates inside (design 0060) would only run the loop twice.
CALLS_F_AS_IS = True
