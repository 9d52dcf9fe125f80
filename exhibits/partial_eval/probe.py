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
  Past ``MAX_COMPILED_EQNS`` JVP eqns no row is compiled: each has its saved residuals (partial
  evaluation, no compile) and ``not_measured`` says why its compiled columns are empty.

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

from jaxscope.exhibit_api import (
    CallPlan,
    ProbeContext,
    count_eqns,
    default_known,
    exception_class,
    exception_text,
    is_memory_error,
    jvp_program,
    note_program_size,
    options_as,
    plan_call,
    remat_table,
    split_program,
)

from exhibits.partial_eval.events import JaxprSplit, RematPolicyMeasured, RematUnavailable
from exhibits.transpose.explain import ad_help

from .options import PartialEvalOptions

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
        # Splitting it takes time in proportion to all its eqns, a jitted f's inner ones
        # included: the limits grow now (design 0046).
        note_program_size(count_eqns(program.jaxpr.jaxpr))
        known = options_as(ctx.options, PartialEvalOptions).known
        if known is None:
            known = default_known(len(program.labels), program.n_primals)
        record, split = split_program(program, known)
        # The walker's record, made this exhibit's event (design 0059).
        event = JaxprSplit.model_validate(record, from_attributes=True)
        calls = split_calls(program.jaxpr.jaxpr, split.known.jaxpr, split.unknown.jaxpr)
        n_eqns = len(program.jaxpr.jaxpr.eqns)
        event.split_calls = calls
        event.dropped = (
            n_eqns + len(calls) - len(split.known.jaxpr.eqns) - len(split.unknown.jaxpr.eqns)
        )
        # The table's limits go by the whole program: a jitted f is one top-level call eqn
        # holding every other (the GPT stack under jax.jit: 1 eqn, 2,447 inside).
        n_eqns = count_eqns(program.jaxpr.jaxpr)
    ctx.emit(event)
    with ctx.stage("compile"):
        if n_eqns > MAX_REMAT_EQNS:
            ctx.emit(
                RematUnavailable(
                    error_class="too large",
                    message=f"the JVP jaxpr has {n_eqns:,} eqns, those inside its calls included "
                    f"(the table is measured up to "
                    f"{MAX_REMAT_EQNS:,})",
                    explanation=TOO_LARGE,
                    reason="too_large",
                )
            )
        else:
            _emit_remat_table(ctx, plan, not_compiled(n_eqns))


# Past this many JVP eqns there is no table at all. Below it and past MAX_COMPILED_EQNS each row
# only traces jax.vjp of the checkpointed f (saved_residuals) and lists what it saves: the GPT
# stack of examples/real at 40 layers (8,020 JVP eqns) ran in 25 s of the CLI (row events ~0.4 MB,
# its jaxpr_split 13 MB, near the worker's 16 MiB event cap, which a larger split would pass).
MAX_REMAT_EQNS = 10_000
TOO_LARGE = (
    "Each row of the remat table traces `jax.vjp(jax.checkpoint(f, policy))` and lists every "
    "residual it saves (and, for a small f, compiles and times `jax.grad` of it): for a "
    "function this size that does not fit in one run. The split above is complete. Try the "
    "table on a smaller f (fewer layers or unrolled iterations: `lax.scan` keeps the jaxpr "
    "small)."
)


# Past this many JVP eqns no row is compiled (residuals only). One compile of
# jax.jit(jax.grad(jax.checkpoint(f))) grows with the program: for the GPT stack of examples/real
# on 2 shared CPU cores (load 5-8), 4.5 s at 2 layers (458 JVP eqns), 7.5 s at 4 (856), 16-28 s
# at 12 (2,448), i.e. ~8 ms per eqn, five rows or more ~40 ms per eqn plus ~1 s per row to lower
# and time, while the run's wall limit grows by 12 ms per eqn from 30 s (settings.scaled_limit,
# budget 3). The 4-layer stack timed out at its 40 s limit; the 2-layer one finished (42 s CLI
# wall at load 7.7), as does nnx_adam_step (407 eqns). Design 0007, "Large programs".
MAX_COMPILED_EQNS = 500
# One compile of the 12-layer GPT stack's gradient, as measured when the limit above was set.
REFERENCE_COMPILE = "examples/real/gpt_stack.py, 2,448 JVP eqns, took 16-28 s on 2 CPU cores"


def not_compiled(n_eqns: int) -> str | None:
    """Why the remat rows of a JVP of ``n_eqns`` eqns are not compiled (``None``: they are)."""
    if n_eqns <= MAX_COMPILED_EQNS:
        return None
    return (
        f"Not measured for a program this size: the JVP jaxpr has {n_eqns:,} eqns (those inside "
        f"its calls included), and the table compiles its rows only up to "
        f"{MAX_COMPILED_EQNS:,}. Each row compiles "
        "`jax.jit(jax.grad(jax.checkpoint(f, policy)))` with XLA, and one compile per row does "
        f"not fit in the run's time at this size (for scale: {REFERENCE_COMPILE} for one "
        "compile). The saved residuals and their bytes need no compile (JAX's partial evaluator, "
        "what `print_saved_residuals` prints) and are complete. To measure the temp bytes, step "
        "time and gradient check, run a part of the program (fewer layers or unrolled "
        "iterations)."
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


def _emit_remat_table(ctx: ProbeContext, plan: CallPlan, not_compiled: str | None) -> None:
    """Emit the remat rows, or :class:`RematUnavailable` when ``jax.grad`` fails."""
    measured = 0
    try:
        for row in remat_table(plan, not_compiled):
            # The walker's record, made this exhibit's event (design 0059).
            ctx.emit(RematPolicyMeasured.model_validate(row, from_attributes=True))
            measured += 1
    except Exception as exc:  # shown beside the split, the exhibit's other half (see docstring)
        if is_memory_error(exc):
            raise
        help_ = ad_help(exc)
        why = WHY_UNAVAILABLE if measured == 0 else why_stopped(measured)
        ctx.emit(
            RematUnavailable(
                # cut, and read without raising (the user's f may raise its own exception)
                error_class=exception_class(exc),
                message=exception_text(exc) or exception_class(exc),
                explanation=f"{why} {help_.explanation}" if help_ else why,
            )
        )


def why_stopped(measured: int) -> str:
    """``RematUnavailable.explanation`` when JAX raised on a policy after ``measured`` rows were
    measured (a policy whose checkpointed f JAX refuses where the others pass): those rows
    stand."""
    rows = "The row above was" if measured == 1 else f"The {measured} rows above were"
    return (
        f"{rows} measured; JAX raised this on the next policy's "
        "`jax.grad(jax.checkpoint(f, policy))`, so it and the policies after it are not. The "
        "split above is only forward mode (`jax.jvp`, then partial evaluation) and stays valid."
    )
