"""The stations exhibit's probe: the four stations of a jitted call, each a real JAX object.

``jf = jax.jit(f, static_argnums, static_argnames)``; then

* stage ``trace``: ``traced = jf.trace(*args, **kwargs)`` with eqns streamed as JAX records them
  -> :class:`EqnRecorded` ..., :class:`JaxprStaged` (``traced.jaxpr``);
* stage ``lower``: ``lowered = traced.lower()`` -> :class:`ModuleLowered` (``as_text()``,
  ``as_text(dialect="hlo")``, op links from the debug locations);
* stage ``compile``: ``compiled = lowered.compile()`` -> :class:`ExecutableCompiled`;
* stage ``run``: ``compiled(*dynamic_args)`` -> :class:`ProgramExecuted`.

With option ``target`` "tpu-v5e" (a "tpu_compile" worker, design 0067) the arguments are
abstract values on a TPU v5e device of libtpu's offline topology, ``lower`` is for the TPU and
``compile`` the TPU compiler's; there is no run stage.

:class:`StageTimed` events carry ``jax.monitoring``'s own durations of trace, lower and compile.
"""

from __future__ import annotations

import base64
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.exhibit_api import (
    MAX_REPEATS,
    JaxprStaged,
    ProbeContext,
    concrete_args,
    executable_compiled,
    jaxpr_view,
    module_lowered,
    options_as,
    placeholder_paths,
    plan_call,
    program_executed,
    recording_eqns,
    stage_timers,
)

from exhibits.stations import tpu_target
from exhibits.stations.events import (
    ExecutableCompiled,
    ModuleLowered,
    OutputValuesSent,
    ProgramExecuted,
)
from exhibits.stations.options import StationsOptions
from exhibits.tracing.recorded import emitting


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
            compiled: Any = lowered.compile()
            compiled_event = ExecutableCompiled.model_validate(
                executable_compiled(compiled, traced.jaxpr), from_attributes=True
            )
        if tpu is not None:
            compiled_event.caveats.insert(0, tpu_target.not_run_caveat(tpu))
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
    ctx.emit(executed)
    if not ctx.on_demand:
        # A run that prints whole artefacts (the CLI's) gets the outputs the previews summarise.
        for sent in values_sent(executed, run.values):
            ctx.emit(sent)


# numpy's printout summarises past this many elements (``preview_value``'s threshold).
SUMMARISED_FROM = 50
# The bytes of values one OutputValuesSent carries (1.4 MB of base64 on the line).
BYTES_PER_EVENT = 2**20


def values_sent(executed: ProgramExecuted, out: Any) -> list[OutputValuesSent]:
    """The values of every output leaf whose preview is summarised, as
    :class:`OutputValuesSent` events of at most :data:`BYTES_PER_EVENT` each, in the order of
    ``executed.outputs``. A leaf numpy cannot hold as numbers (a PRNG key array, float0) keeps
    its preview."""
    leaves = jax.tree.leaves(out)
    if len(leaves) != len(executed.outputs):
        return []
    events: list[OutputValuesSent] = []
    for index, (view, leaf) in enumerate(zip(executed.outputs, leaves, strict=True)):
        try:
            arr = np.asarray(leaf)
        except Exception:  # a PRNG key array: its preview is JAX's repr
            continue
        numeric = arr.dtype == np.bool_ or jnp.issubdtype(arr.dtype, np.number)
        if arr.size <= SUMMARISED_FROM or not numeric or view.dtype != str(arr.dtype):
            continue
        flat = np.ascontiguousarray(arr).ravel()  # native order: little-endian on JAX's hosts
        step = max(1, BYTES_PER_EVENT // flat.itemsize)
        for start in range(0, flat.size, step):
            part = flat[start : start + step]
            events.append(
                OutputValuesSent(
                    output=index,
                    path=view.path,
                    dtype=str(arr.dtype),
                    start=start,
                    count=int(part.size),
                    data=base64.b64encode(part.tobytes()).decode("ascii"),
                )
            )
    return events
