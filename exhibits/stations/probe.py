"""The stations exhibit's probe: the four stations of a jitted call, each a real JAX object.

``jf = jax.jit(f, static_argnums, static_argnames)``; then

* stage ``trace``: ``traced = jf.trace(*args, **kwargs)`` with eqns streamed as JAX records them
  -> :class:`EqnRecorded` ..., :class:`JaxprStaged` (``traced.jaxpr``);
* stage ``lower``: ``lowered = traced.lower()`` -> :class:`ModuleLowered` (``as_text()``,
  ``as_text(dialect="hlo")``, op links from the debug locations);
* stage ``compile``: ``compiled = lowered.compile()`` -> :class:`ExecutableCompiled`;
* stage ``run``: ``compiled(*dynamic_args)`` -> :class:`ProgramExecuted`; on an accelerator
  also a ``jax.profiler`` trace of more calls -> :class:`ProgramProfiled` (design 0073).

With option ``target`` "tpu-v5e" (a "tpu_compile" worker, design 0067) the arguments are
abstract values on a TPU v5e device of libtpu's offline topology, ``lower`` is for the TPU and
``compile`` the TPU compiler's; there is no run stage.

:class:`StageTimed` events carry ``jax.monitoring``'s own durations of trace, lower and compile.
"""

from __future__ import annotations

from typing import Any

import jax
from jaxscope.exhibit_api import (
    MAX_REPEATS,
    JaxprStaged,
    ProbeContext,
    compile_with_peak,
    concrete_args,
    executable_compiled,
    jaxpr_view,
    module_lowered,
    options_as,
    placeholder_paths,
    plan_call,
    program_executed,
    program_profile,
    recording_eqns,
    stage_timers,
)

from exhibits.stations import profile, tpu_target
from exhibits.stations.events import (
    ExecutableCompiled,
    ModuleLowered,
    ProgramExecuted,
)
from exhibits.stations.options import StationsOptions
from exhibits.tracing.recorded import emitting
from exhibits.whole_values import values_sent


def run(ctx: ProbeContext) -> None:
    """Run the four stations on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    jf = plan.jit()
    args, kwargs = plan.args, plan.kwargs
    lower_kw: dict[str, Any] = {}
    tpu = None
    if options_as(ctx.options, StationsOptions).target == "tpu-v5e":
        tpu = tpu_target.tpu_device()
        args, kwargs = tpu_target.placed(args, kwargs, set(plan.normalized_argnums()), tpu)
        lower_kw["lowering_platforms"] = tpu_target.PLATFORMS
    with stage_timers(ctx.emit, plan.fun_name):
        with ctx.stage("trace"), recording_eqns(emitting(ctx.emit)):
            traced: Any = jf.trace(*args, **kwargs, **plan.static_kwargs)
        ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(traced.jaxpr)))
        with ctx.stage("lower"):
            lowered: Any = traced.lower(**lower_kw)
            # The walkers' records, made this exhibit's events (design 0059).
            event = ModuleLowered.model_validate(
                module_lowered(lowered, traced.jaxpr), from_attributes=True
            )
        ctx.emit(event)
        with ctx.stage("compile"):
            peak = None
            if tpu is not None or jax.default_backend() == "tpu":
                # A TPU compile: also XLA's buffer dumps, for the memory peak (design 0073).
                compiled, peak = compile_with_peak(lowered)
            else:
                compiled = lowered.compile()
            compiled_event = ExecutableCompiled.model_validate(
                executable_compiled(compiled, traced.jaxpr), from_attributes=True
            )
            if peak is not None:
                compiled_event.memory_peak = profile.memory_peak(peak, compiled_event.hlo_links)
        if tpu is not None:
            compiled_event.caveats.insert(0, tpu_target.not_run_caveat(tpu))
            compiled_event.compiled_for = tpu_target.NAME
            compiled_event.topology = tpu_target.TOPOLOGY
        ctx.emit(compiled_event)
    if tpu is not None:
        return  # compiled for a TPU this machine does not have: nothing to run
    with ctx.stage("run"):
        args = concrete_args(plan.dynamic_args())
        # A program with effects (jax.debug.print) prints on every call: time one warm call.
        repeats = 1 if traced.jaxpr.effects else MAX_REPEATS
        run = program_executed(compiled, args, plan.kwargs, max_repeats=repeats)
        executed = ProgramExecuted.model_validate(run, from_attributes=True)
        executed.zeros_for = placeholder_paths(ctx.snippet.args, ctx.snippet.kwargs)
        profiled = None
        if executed.platform == "tpu" and not traced.jaxpr.effects:
            # On a TPU: the program's time per HLO instruction (design 0073; the trace reader
            # knows the TPU's device plane, and no GPU has been tried).
            record = program_profile(compiled, args, plan.kwargs)
            profiled = profile.program_profiled(record, compiled_event.hlo_links)
    ctx.emit(executed)
    if profiled is not None:
        ctx.emit(profiled)
    if not ctx.on_demand:
        # A run that prints whole artefacts (the CLI's) gets the outputs the previews summarise.
        for sent in values_sent(executed.outputs, run.values):
            ctx.emit(sent)
