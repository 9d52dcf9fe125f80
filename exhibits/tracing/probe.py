"""The tracing exhibit's probe: trace the user's ``f`` to a jaxpr, streaming each eqn as JAX
records it, then call ``jax.jit(f)`` again and again to show the jit cache at work.

Events, in order:

* stage ``trace``: one :class:`EqnRecorded` per top-level eqn as JAX records it
  (``jaxscope.internals.recording``), then :class:`JaxprStaged` whose ``jaxpr.text`` is
  ``str(jax.make_jaxpr(f, static_argnums=...)(*args, **kwargs))`` byte for byte (static keyword
  arguments closed over, see ``jaxscope.internals.calling``). Python ``print`` output of ``f``
  during this stage is reported by the runner as ``stdout_printed`` with stage ``trace``; JAX's
  own trace duration (``jax.monitoring``) arrives as :class:`StageTimed`.
* stage ``call`` (``call_index`` 0, 1, ...): ``jf = jax.jit(f, static_argnums,
  static_argnames)`` is called with ``args`` (call 0), then once per ``ctx.options.calls`` entry
  (same arguments, axis 0 grown by one, float16/int16 dtypes, or the user's expression: see
  ``CallPlan.vary``); after each call, :class:`JitCalled` says whether it traced, the cache size,
  what the user's code printed during the call, and JAX's cache-miss explanation.

``make_jaxpr`` and ``jit`` share JAX's tracing caches, so before call 0 those caches are emptied
(``jaxscope.internals.cache.fresh_caches``): call 0 then traces as a first call in a fresh
process does.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from jaxscope.exhibit_api import (
    CallPlan,
    JaxprStaged,
    ProbeContext,
    aval_view,
    blame_typed,
    block_until_ready,
    cache_size,
    fresh_caches,
    jaxpr_view,
    mark_during,
    observe_call,
    options_as,
    plan_call,
    recording_eqns,
    stage_timers,
)

from exhibits.tracing.events import JitCalled
from exhibits.tracing.options import CallSpec

from .options import TracingOptions
from .recorded import emitting


def run(ctx: ProbeContext) -> None:
    """Run the tracing exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    with (
        ctx.stage("trace"),
        stage_timers(ctx.emit, plan.fun_name),
        recording_eqns(emitting(ctx.emit)),
    ):
        closed = plan.make_jaxpr()
    ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(closed)))
    call_sequence(ctx, plan)


def call_sequence(ctx: ProbeContext, plan: CallPlan) -> None:
    """Call ``jax.jit(f)`` once with ``args`` and once per ``ctx.options.calls`` entry."""
    specs = [CallSpec(change="same"), *options_as(ctx.options, TracingOptions).calls]
    jf = plan.jit()
    fresh_caches()
    for index, spec in enumerate(specs):
        with ctx.stage("call", call_index=index), typed_arguments(spec, index) as step:
            args, kwargs = plan.vary(spec.change, spec.expr, ctx.snippet.namespace)
            step[0] = "call"
            with observe_call(plan.fun_name) as obs:
                block_until_ready(plan.call(jf, args, kwargs))
        ctx.emit(
            JitCalled(
                call_index=index,
                change=spec.change,
                arg_avals=[aval_view(a) for a in plan.dynamic_avals(args, kwargs)],
                traced=obs.traced,
                cache_size=cache_size(jf),
                printed=obs.printed,
                explanation=obs.explanation,
            )
        )


@contextmanager
def typed_arguments(spec: CallSpec, index: int) -> Iterator[list[str]]:
    """For a call whose arguments the user typed (``change="expr"``): an exception escaping the
    block is blamed on that expression (:func:`blame_typed`), not on a line of the snippet such
    as ``f``'s ``def`` (a traceback frame in the snippet still wins). The block sets ``step[0]``
    to ``"call"`` once the expression is evaluated and ``f`` is being called."""
    step = ["eval"]
    try:
        yield step
    except Exception as exc:
        if spec.change != "expr":
            raise
        # run_failed.during is plain text (no code spans); the explanation quotes the expression.
        which = f"the arguments you typed for call #{index}"
        typed = f"{which} (`{spec.expr}`)"
        name = type(exc).__name__
        if isinstance(exc, SyntaxError):
            mark_during(exc, f"while reading {which}")
            at = f" at column {exc.offset}" if exc.offset else ""
            blame_typed(
                exc,
                f"{typed[0].upper()}{typed[1:]} are not valid Python ({exc.msg}{at}). The"
                " expression comes from the call box, not from the snippet, so no line of the"
                " snippet is at fault; it must give the tuple of positional arguments (static"
                " ones included), e.g. `(jnp.ones(3),)`.",
            )
        elif step[0] == "eval":
            mark_during(exc, f"while evaluating {which}")
            blame_typed(
                exc,
                f"Evaluating {typed} raised {name}. The expression comes from the call box,"
                " not from the snippet, so no line of the snippet is at fault; it must give the"
                " tuple of positional arguments (static ones included), e.g. `(jnp.ones(3),)`.",
            )
        else:
            mark_during(exc, f"while calling f with {which}")
            blame_typed(
                exc,
                f"Calling `f` with {typed} raised {name} before any line of `f` ran: the"
                " expression comes from the call box, not from the snippet. It must give one"
                " entry per positional parameter of `f` (static ones included), as `args` does.",
            )
        raise
