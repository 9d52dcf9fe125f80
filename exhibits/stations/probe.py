"""The stations exhibit's probe: the four stations of a jitted call, each a real JAX object.

``jf = jax.jit(f, static_argnums, static_argnames)``; then

* stage ``trace``: ``traced = jf.trace(*args, **kwargs)`` with eqns streamed as JAX records them
  -> :class:`EqnRecorded` ..., :class:`JaxprStaged` (``traced.jaxpr``);
* stage ``lower``: ``lowered = traced.lower()`` -> :class:`ModuleLowered` (``as_text()``,
  ``as_text(dialect="hlo")``, op links from the debug locations);
* stage ``compile``: ``compiled = lowered.compile()`` -> :class:`ExecutableCompiled`;
* stage ``run``: ``compiled(*dynamic_args)`` -> :class:`ProgramExecuted`.

:class:`StageTimed` events carry ``jax.monitoring``'s own durations of trace, lower and compile.
"""

from __future__ import annotations

from typing import Any

from jaxscope.exhibit_api import (
    MAX_REPEATS,
    JaxprStaged,
    ProbeContext,
    concrete_args,
    executable_compiled,
    jaxpr_view,
    module_lowered,
    placeholder_paths,
    plan_call,
    program_executed,
    recording_eqns,
    stage_timers,
)

from exhibits.stations.events import ProgramExecuted
from exhibits.tracing.recorded import emitting


def run(ctx: ProbeContext) -> None:
    """Run the four stations on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    jf = plan.jit()
    with stage_timers(ctx.emit, plan.fun_name):
        with ctx.stage("trace"), recording_eqns(emitting(ctx.emit)):
            traced: Any = jf.trace(*plan.args, **plan.kwargs, **plan.static_kwargs)
        ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(traced.jaxpr)))
        with ctx.stage("lower"):
            lowered: Any = traced.lower()
            event = module_lowered(lowered, traced.jaxpr)
        ctx.emit(event)
        with ctx.stage("compile"):
            compiled: Any = lowered.compile()
            compiled_event = executable_compiled(compiled, traced.jaxpr)
        ctx.emit(compiled_event)
    with ctx.stage("run"):
        args = concrete_args(plan.dynamic_args())
        # A program with effects (jax.debug.print) prints on every call: time one warm call.
        repeats = 1 if traced.jaxpr.effects else MAX_REPEATS
        run = program_executed(compiled, args, plan.kwargs, max_repeats=repeats)
        executed = ProgramExecuted.model_validate(run, from_attributes=True)
        executed.zeros_for = placeholder_paths(ctx.snippet.args, ctx.snippet.kwargs)
    ctx.emit(executed)
