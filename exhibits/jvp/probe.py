"""The jvp exhibit's probe: forward-mode autodiff of the user's ``f``, one primal eqn at a time,
through JAX's own JVP rules.

Events, in order:

* stage ``trace``: :class:`JaxprStaged` with the primal jaxpr,
  ``str(jax.make_jaxpr(f, static_argnums=...)(*args, **kwargs))`` (as the tracing exhibit; static
  keyword arguments closed over by ``plan_call``).
* stage ``run``: the JVP is traced and evaluated (``jaxscope.internals.jvp_steps``), then one
  :class:`JvpRuleApplied` per top-level primal eqn, in order (what JAX's ``JVPTrace`` did with it:
  the rule from ``ad.primitive_jvps``, the primal and tangent values in and out, the eqns the
  rule emitted), then :class:`JvpJaxprStaged`: JAX's whole JVP jaxpr
  (``jax.make_jaxpr(lambda primals, tangents: jax.jvp(f_closed, primals, tangents))``), each eqn
  attributed to its primal eqn, and the outputs checked against ``jax.jvp``.

When ``f`` cannot be traced (``jax.make_jaxpr`` fails) the probe asks plain eager
``jax.jvp(f, primals, tangents)``: if that fails too, its error is the one reported (stage
``run``), since it is what the user gets from ``jax.jvp`` (e.g. "can't apply forward-mode autodiff
(jvp) to a custom_vjp function", where tracing first fails on a ``custom_vjp``'s int argument used
as a shape); if eager ``jax.jvp`` works, the tracing error is reported (stage ``trace``): the
exhibit needs the jaxpr.

The tangents are the snippet's ``tangents`` when it defines one (same pytree structure as the
dynamic positional arguments), else ones for floating leaves and the ``float0`` zero for integer
leaves (see ``docs/design/0006-jvp-exhibit.md``).
"""

from __future__ import annotations

from typing import Any

import jax
from jaxscope.exhibit_api import (
    CallPlan,
    InvalidSnippet,
    JaxprStaged,
    JvpJaxprRecord,
    JvpStepRecord,
    ProbeContext,
    blame_line,
    capture_jvp,
    choose_tangents,
    closed_function,
    concrete_args,
    is_memory_error,
    jaxpr_view,
    plan_call,
    setting_line,
)

from exhibits.jvp.events import JvpJaxprStaged, JvpRuleApplied

TANGENTS_EXPLANATION = (
    "JAX checks the tangents you set against the arguments before it differentiates: each "
    "tangent must have its argument's shape, and its dtype (float0 for an int or bool argument)."
)


def eager_jvp_error(plan: CallPlan, given_tangents: Any = None) -> Exception | None:
    """What plain eager ``jax.jvp(f_closed, primals, tangents)`` raises on the snippet's
    arguments (the exhibit's tangents), or None when it works."""
    try:
        primals = concrete_args(plan.dynamic_args())
        tangents = choose_tangents(primals, given_tangents)
        jax.jvp(closed_function(plan), primals, tangents)
    except Exception as exc:
        return exc
    return None


def run(ctx: ProbeContext) -> None:
    """Run the jvp exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    given = ctx.snippet.namespace.get("tangents")
    jvp_error: Exception | None = None
    with ctx.stage("trace"):
        try:
            primal = plan.make_jaxpr()
        except Exception as exc:
            if is_memory_error(exc) or isinstance(exc, InvalidSnippet):
                raise
            jvp_error = eager_jvp_error(plan, given)
            if jvp_error is None:
                raise
    if jvp_error is not None:
        with ctx.stage("run"):
            raise jvp_error
    ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(primal)))
    with ctx.stage("run"):
        line = setting_line(ctx.snippet.source, "tangents") if given is not None else None
        if given is not None:
            try:
                choose_tangents(concrete_args(plan.dynamic_args()), given)
            except TypeError as exc:  # our structure check: the snippet's setting is wrong
                raise blame_line(InvalidSnippet(str(exc)), line) from None
        try:
            capture = capture_jvp(plan, primal, given, previews_on_demand=ctx.on_demand)
        except (TypeError, ValueError) as exc:
            # JAX's own check of the tangents (api._jvp: shapes, dtypes, float0 for ints) has no
            # frame in the snippet: it is about the `tangents = ...` line.
            if given is not None and "tangent" in str(exc) and "jvp" in str(exc):
                raise blame_line(exc, line, explanation=TANGENTS_EXPLANATION) from None
            raise
    for step in capture.steps:
        ctx.emit(step_event(step))
    ctx.emit(staged_event(capture.staged))


def step_event(step: JvpStepRecord) -> JvpRuleApplied:
    """The ``jvp_rule_applied`` event of one of ``capture_jvp``'s step records (its values'
    pending previews pass on as they are: nothing is evaluated here, design 0068)."""
    return JvpRuleApplied.model_validate(step, from_attributes=True)


def staged_event(staged: JvpJaxprRecord) -> JvpJaxprStaged:
    """The ``jvp_jaxpr_staged`` event of ``capture_jvp``'s verdict."""
    return JvpJaxprStaged.model_validate(staged, from_attributes=True)
