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

The tangents are the snippet's ``tangents`` when it defines one (same pytree structure as the
dynamic positional arguments), else ones for floating leaves and the ``float0`` zero for integer
leaves (see ``docs/design/0006-jvp-exhibit.md``).
"""

from __future__ import annotations

from jaxscope.internals.calling import plan_call
from jaxscope.internals.jvp_steps import capture_jvp
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import JaxprStaged
from jaxscope.sandbox.probe_api import ProbeContext


def run(ctx: ProbeContext) -> None:
    """Run the jvp exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    with ctx.stage("trace"):
        primal = plan.make_jaxpr()
    ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(primal)))
    with ctx.stage("run"):
        capture = capture_jvp(plan, primal, ctx.snippet.namespace.get("tangents"))
    for step in capture.steps:
        ctx.emit(step)
    ctx.emit(capture.staged)
