"""The vmap exhibit's probe: ``jax.vmap`` of the user's ``f``, one per-example eqn at a time,
through JAX's own batching rules.

Events, in order:

* stage ``trace``: :class:`VmapInputsMapped` (each argument leaf's batch dim and per-example
  aval, read off the ``BatchTracer`` ``jax.vmap(..., in_axes)`` made of it), then
  :class:`JaxprStaged` with the per-example (unbatched) jaxpr, ``jax.make_jaxpr(f,
  static_argnums)`` at those per-example avals.
* stage ``run``: one :class:`BatchRuleApplied` per eqn of that jaxpr (the rule from
  ``batching.fancy_primitive_batchers``, batch dims and avals in and out, the eqns it emitted),
  then :class:`BatchedJaxprStaged`: ``jax.make_jaxpr(jax.vmap(f, in_axes, out_axes),
  static_argnums)(*args)`` and ``jax.vmap``'s outputs.

``in_axes``/``out_axes``: ``options.in_axes``/``out_axes`` (Python expressions evaluated in the
snippet's namespace), else the snippet's ``in_axes``/``out_axes``, else ``0``. The static
arguments (``static_argnums``) stay closed over and are never mapped: ``in_axes`` applies to the
dynamic positional arguments, as in ``jax.vmap(f_closed, in_axes)(*dynamic_args)``; an
``in_axes`` tuple with one entry per positional argument, the static ones included, has the
static entries dropped (``batching_steps.dynamic_in_axes``). JAX's errors propagate unchanged: a
bad ``in_axes``,
inconsistent mapped sizes, a primitive with no batching rule, a Python ``if`` on a batched value
(the per-example trace's error is replaced by the one ``jax.vmap`` itself raises).
"""

from __future__ import annotations

from typing import Any

from jaxscope.internals.batching_steps import (
    batched_jaxpr,
    capture_batching,
    example_jaxpr,
    inputs_event,
    map_inputs,
)
from jaxscope.internals.calling import plan_call
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import JaxprStaged
from jaxscope.sandbox.probe_api import ProbeContext


def _axes(option: str | None, namespace: dict[str, Any], name: str) -> tuple[Any, str]:
    """The axes value and its text: the option's expression, the snippet's variable, or 0."""
    if option is not None and option.strip():
        return eval(option, namespace), option.strip()  # the user's own expression, sandboxed
    if name in namespace:
        return namespace[name], repr(namespace[name])
    return 0, "0"


def run(ctx: ProbeContext) -> None:
    """Run the vmap exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    namespace = ctx.snippet.namespace
    with ctx.stage("trace"):
        in_axes, in_text = _axes(ctx.options.in_axes, namespace, "in_axes")
        out_axes, out_text = _axes(ctx.options.out_axes, namespace, "out_axes")
        mapped = map_inputs(plan, in_axes)
        # Shown even when the per-example trace fails below (e.g. a Python `if` on a mapped value).
        ctx.emit(inputs_event(mapped, in_text, out_text))
        try:
            example, out_shape = example_jaxpr(plan, mapped)
        except Exception:
            # The error the user meets is the one jax.vmap raises (e.g. a BatchTracer, not a
            # per-example tracer, in a Python `if`): raise that one when it raises.
            batched_jaxpr(plan, in_axes, out_axes)
            raise
    ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(example)))
    with ctx.stage("run"):
        capture = capture_batching(
            plan, mapped, example, out_shape, in_axes, out_axes, (in_text, out_text)
        )
    for step in capture.steps:
        ctx.emit(step)
    ctx.emit(capture.staged)
