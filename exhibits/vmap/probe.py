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
  static_argnums)(*args)`` and ``jax.vmap``'s outputs. When batching fails, the steps that
  succeeded are emitted, then a ``batch_rule_applied`` with ``mechanism="failed"`` for the eqn
  JAX raised on, then the run fails with JAX's error.

``in_axes``/``out_axes``: ``options.in_axes``/``out_axes`` (Python expressions evaluated in the
snippet's namespace), else the snippet's ``in_axes``/``out_axes``, else ``0``. The static
arguments (``static_argnums``) stay closed over and are never mapped: ``in_axes`` applies to the
dynamic positional arguments, as in ``jax.vmap(f_closed, in_axes)(*dynamic_args)``; an
``in_axes`` tuple with one entry per positional argument, the static ones included, has the
static entries dropped (``batching_steps.dynamic_in_axes``). JAX's errors propagate unchanged: a
bad ``in_axes``,
inconsistent mapped sizes, a primitive with no batching rule, a Python ``if`` on a batched value
(the per-example trace's error is replaced by the one ``jax.vmap`` itself raises).
When ``jax.vmap`` rejects the axes or the arguments before mapping anything,
:class:`VmapInputsMapped` is still emitted with the axes tried (``axis_size`` ``None``, no
inputs), an error about ``in_axes`` set by the snippet points at the line that sets it
(``setting_line``), and ``run_failed.during`` says where JAX was (mapping the arguments, or
batching: ``probe_api.mark_during``). An error raised by ``out_axes`` (after ``f`` returned,
while ``jax.vmap`` moved each output's batch axis: an axis past an output's rank, ``None`` for
a batched output, a tree that is not a prefix of the outputs) is told by the same call with
``out_axes=0`` tracing: it names ``out_axes`` and points at the line that sets it, or at no
line when the view's box set it (``blame_typed``).
"""

from __future__ import annotations

from typing import Any

from jaxscope.exhibit_api import (
    BatchStepRecord,
    JaxprStaged,
    ProbeContext,
    batched_jaxpr,
    blame_line,
    blame_typed,
    capture_batching,
    during,
    eval_option,
    example_jaxpr,
    jaxpr_view,
    map_inputs,
    mark_during,
    options_as,
    plan_call,
    setting_line,
)

from exhibits.vmap.events import (
    BatchedJaxprStaged,
    BatchRuleApplied,
    MappedInput,
    VmapInputsMapped,
)

from .options import VmapOptions


def _axes(option: str | None, namespace: dict[str, Any], name: str) -> tuple[Any, str, bool]:
    """The axes value, its text and whether the snippet set it: the option's expression, the
    snippet's variable, or 0."""
    if option is not None and option.strip():
        # A bad expression is the option's fault (invalid_snippet naming it), not f's.
        return eval_option(option, name, namespace), option.strip(), False
    if name in namespace:
        return namespace[name], repr(namespace[name]), True
    return 0, "0", False


# JAX's messages (jax/_src/api.py vmap, _mapped_axis_size, flatten_axes) about in_axes itself;
# "vmap got inconsistent sizes" is about the arguments as much as the axes.
_IN_AXES_MESSAGES = ("vmap in_axes", "vmap was requested to map", "non-None value in in_axes")


def _out_axes_at_fault(plan: Any, in_axes: Any, out_axes: Any) -> bool:
    """Whether ``out_axes`` alone made ``jax.vmap`` fail: the same call with ``out_axes=0``
    (every output batched on its first axis, which any output takes) traces."""
    if isinstance(out_axes, int) and not isinstance(out_axes, bool) and out_axes == 0:
        return False
    try:
        batched_jaxpr(plan, in_axes, 0)
    except Exception:
        return False
    return True


def _blame_out_axes(exc: BaseException, source: str, out_text: str, out_set: bool) -> None:
    """Name ``out_axes`` in ``exc``'s explanation and point at the line that sets it (the
    snippet's ``out_axes = ...``; no snippet line for the view's box)."""
    whose = "the snippet's" if out_set else "the out_axes box's"
    explanation = (
        f"`jax.vmap` rejected {whose} `out_axes = {out_text}`: JAX raised this after `f` "
        "returned, while it moved each output's batch axis where `out_axes` puts it (the same "
        "call with `out_axes=0` works). `out_axes` needs, per output of `f`, an axis at most its "
        "per-example rank (negative counts from the end), `None` only for an output that "
        "depends on no mapped input, and a tree that is a prefix of `f`'s outputs."
    )
    mark_during(exc, "while jax.vmap moved the outputs' batch axes (out_axes)")
    line = setting_line(source, "out_axes") if out_set else None
    if line is not None:
        blame_line(exc, line, explanation=explanation)
    else:
        blame_typed(exc, explanation)


def run(ctx: ProbeContext) -> None:
    """Run the vmap exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    namespace = ctx.snippet.namespace
    with ctx.stage("trace"):
        in_axes, in_text, in_set = _axes(
            options_as(ctx.options, VmapOptions).in_axes, namespace, "in_axes"
        )
        out_axes, out_text, out_set = _axes(
            options_as(ctx.options, VmapOptions).out_axes, namespace, "out_axes"
        )
        try:
            mapped = map_inputs(plan, in_axes)
        except Exception as exc:
            # The axes the run tried stay on the page; an error about in_axes points at the
            # line that sets it (when the snippet does: not for the view's in_axes box).
            ctx.emit(
                VmapInputsMapped(in_axes=in_text, out_axes=out_text, axis_size=None, inputs=[])
            )
            if in_set and str(exc).startswith(_IN_AXES_MESSAGES):
                blame_line(exc, setting_line(ctx.snippet.source, "in_axes"))
            elif str(exc).startswith("vmap got inconsistent sizes"):
                blame_line(exc, setting_line(ctx.snippet.source, "args"))
            mark_during(exc, "while jax.vmap mapped the arguments (in_axes)")
            raise
        # Shown even when the per-example trace fails below (e.g. a Python `if` on a mapped value).
        ctx.emit(
            VmapInputsMapped(
                in_axes=in_text,
                out_axes=out_text,
                axis_size=mapped.axis_size,
                inputs=[MappedInput.model_validate(i, from_attributes=True) for i in mapped.inputs],
            )
        )
        try:
            example, out_shape = example_jaxpr(plan, mapped)
        except Exception:
            # The error the user meets is the one jax.vmap raises (e.g. a BatchTracer, not a
            # per-example tracer, in a Python `if`): raise that one when it raises.
            batched_jaxpr(plan, in_axes, out_axes)
            raise
    ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(example)))
    with ctx.stage("run"), during("while batching (jax.vmap's batching rules)"):
        try:
            capture = capture_batching(
                plan,
                mapped,
                example,
                out_shape,
                in_axes,
                out_axes,
                (in_text, out_text),
                emit_partial=lambda step: ctx.emit(_step_event(step)),
            )
        except Exception as exc:
            if _out_axes_at_fault(plan, in_axes, out_axes):
                _blame_out_axes(exc, ctx.snippet.source, out_text, out_set)
            raise
    for step in capture.steps:
        ctx.emit(_step_event(step))
    ctx.emit(BatchedJaxprStaged.model_validate(capture.staged, from_attributes=True))


def _step_event(step: BatchStepRecord) -> BatchRuleApplied:
    """The ``batch_rule_applied`` event of one of ``capture_batching``'s step records."""
    return BatchRuleApplied.model_validate(step, from_attributes=True)
