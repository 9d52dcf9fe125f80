"""The partial_eval exhibit's probe: the JVP jaxpr of the user's ``f`` split in two by JAX's own
partial evaluator, then remat as a policy on the same splitter.

Events, in order:

* stage ``trace``: :class:`JaxprSplit`: the JVP jaxpr (``jax.make_jaxpr`` of ``jax.jvp`` of
  the user's call, inputs = primal leaves then tangent leaves, static arguments closed over),
  split by ``pe.partial_eval_jaxpr_nounits`` with ``ctx.options.known`` (one flag per input;
  ``None``: primals known, tangents unknown), and the residuals that cross from the known
  (forward) jaxpr to the unknown (linear) one (``jaxscope.internals.split``);
* stage ``compile``: one :class:`RematPolicyMeasured` per checkpoint policy, streamed as each is
  measured (``jaxscope.internals.remat``): no checkpoint, each argument-free policy of
  ``jax.checkpoint_policies``, and the named policies when ``f`` calls ``checkpoint_name``.

The remat table needs ``jax.grad`` (reverse mode). When JAX refuses it (a ``lax.while_loop``
with a traced bound has a JVP but no transpose; no floating-point input to differentiate...),
one :class:`RematUnavailable` with JAX's error class and text and a plain explanation takes the
table's place (after any rows already measured) and the run ends normally: the split above is
forward mode and stays valid. A memory error still ends the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from typing import Any

from jaxscope.internals.calling import CallPlan, plan_call
from jaxscope.internals.remat import remat_table
from jaxscope.internals.split import default_known, jvp_program, split_event
from jaxscope.sandbox.errors import ad_help, is_memory_error
from jaxscope.sandbox.probe_api import ProbeContext

from exhibits.partial_eval.events import RematUnavailable

WHY_UNAVAILABLE = (
    "Each row of the remat table compiles `jax.grad(jax.checkpoint(f, policy))`: reverse mode, "
    "which needs the transpose of every linear eqn of the split's unknown jaxpr. JAX refused "
    "that for this f, so no policy can be measured. The split above is only forward mode "
    "(`jax.jvp`, then partial evaluation) and stays valid."
)


def run(ctx: ProbeContext) -> None:
    """Run the partial_eval exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    with ctx.stage("trace"):
        program = jvp_program(plan)
        known = ctx.options.known
        if known is None:
            known = default_known(len(program.labels), program.n_primals)
        event, split = split_event(program, known)
        calls = split_calls(program.jaxpr.jaxpr, split.known.jaxpr, split.unknown.jaxpr)
        n_eqns = len(program.jaxpr.jaxpr.eqns)
        event.split_calls = calls
        event.dropped = (
            n_eqns + len(calls) - len(split.known.jaxpr.eqns) - len(split.unknown.jaxpr.eqns)
        )
    ctx.emit(event)
    with ctx.stage("compile"):
        if n_eqns > MAX_REMAT_EQNS:
            ctx.emit(
                RematUnavailable(
                    error_class="too large",
                    message=f"the JVP jaxpr has {n_eqns:,} eqns (the table is measured up to "
                    f"{MAX_REMAT_EQNS:,})",
                    explanation=TOO_LARGE,
                    reason="too_large",
                )
            )
        else:
            _emit_remat_table(ctx, plan)


# The remat table compiles jax.grad(jax.checkpoint(f, policy)) once per policy (about ten): past
# this many JVP eqns that no longer fits the run's time (5,000 primal eqns: >30 s here).
MAX_REMAT_EQNS = 4_000
TOO_LARGE = (
    "Each row of the remat table compiles `jax.grad(jax.checkpoint(f, policy))` and times it: "
    "about ten compiles of a function this size do not fit in one run. The split above is "
    "complete. Try the table on a smaller f (fewer layers or unrolled iterations: `lax.scan` "
    "keeps the jaxpr small)."
)


def _has_jaxpr(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_has_jaxpr(v) for v in value)
    return hasattr(value, "eqns") or (hasattr(value, "jaxpr") and hasattr(value, "consts"))


def is_call(eqn: Any) -> bool:
    """True for an eqn with an inner jaxpr (``jit``, ``scan``, ``cond``, ``while``, ...)."""
    return any(_has_jaxpr(v) for v in eqn.params.values())


def _call_key(eqn: Any) -> Hashable:
    # The partial evaluator re-binds each eqn under its own source_info, so both halves of a
    # split call carry the JVP eqn's traceback object.
    return (eqn.primitive.name, eqn.params.get("name"), id(eqn.source_info.traceback))


def split_calls(jvp: Any, known: Any, unknown: Any) -> list[int]:
    """Indices of the JVP jaxpr's call-like eqns that JAX's partial evaluator split: their rule
    (``pjit``'s ``_pjit_partial_eval``, scan's, cond's...) binds one eqn with the known part of
    the inner jaxpr in the known jaxpr and one with the unknown part in the unknown jaxpr. Found
    as a call eqn of the same primitive, name and source traceback on both sides."""
    k = Counter(_call_key(e) for e in known.eqns if is_call(e))
    u = Counter(_call_key(e) for e in unknown.eqns if is_call(e))
    out: list[int] = []
    for i, eqn in enumerate(jvp.eqns):
        if not is_call(eqn):
            continue
        key = _call_key(eqn)
        if k[key] > 0 and u[key] > 0:
            k[key] -= 1
            u[key] -= 1
            out.append(i)
    return out


def _emit_remat_table(ctx: ProbeContext, plan: CallPlan) -> None:
    """Emit the remat rows, or :class:`RematUnavailable` when ``jax.grad`` fails."""
    try:
        for row in remat_table(plan):
            ctx.emit(row)
    except Exception as exc:  # shown beside the split, the exhibit's other half (see docstring)
        if is_memory_error(exc):
            raise
        help_ = ad_help(exc)
        ctx.emit(
            RematUnavailable(
                error_class=type(exc).__name__,
                message=str(exc) or type(exc).__name__,
                explanation=f"{WHY_UNAVAILABLE} {help_[0]}" if help_ else WHY_UNAVAILABLE,
            )
        )
