"""Remat as a policy on the partial evaluator: for ``jax.checkpoint(f, policy=p)``, what is saved
for the backward pass, what the compiled gradient needs in scratch memory, and how long a step
takes.

Sources:

* the policies are the attributes of ``jax.checkpoint_policies`` ``[PUBLIC]`` that are policies
  themselves, told apart from the policy factories (``save_only_these_names(*names)``, ...) by
  their signature: a policy is called as ``policy(prim, *avals, **params)``, so it accepts
  keyword arguments (``**params``); a factory does not. Aliases (``checkpoint_dots`` is
  ``dots_saveable``) are measured once;
* the names for the named policies are the ``name`` params of the ``name`` primitive
  (``jax.ad_checkpoint.checkpoint_name``) anywhere in ``jax.make_jaxpr`` of the user's call,
  inner jaxprs included (``jax._src.core.jaxprs_in_params`` ``[PRIVATE]``);
* the saved residuals are ``jax._src.ad_checkpoint.saved_residuals(fn, *args, **kwargs)``
  ``[PRIVATE]`` (the list ``jax.ad_checkpoint.print_saved_residuals`` prints): ``(aval, text)``
  pairs, the text JAX's own (``output of sin from <snippet>:3:8 (f)``); the user line is read
  from that text;
* ``temp_bytes`` is ``jax.jit(jax.grad(h)).lower(...).compile().memory_analysis()
  .temp_size_in_bytes`` ``[PUBLIC jax.stages]``, ``h`` the checkpointed call as a function of the
  floating-point leaves only (integer, bool and key leaves and static arguments stay fixed);
* ``step_ms`` is the median wall time of the compiled gradient (``block_until_ready``) over a
  few calls after one warm-up call, on the worker's default device.

The saved residuals need no XLA compile (``saved_residuals`` traces ``jax.vjp`` of the
checkpointed call: JAX's partial evaluator, 0.2-0.5 s per row for the 12-layer GPT stack of
``examples/real``); ``temp_bytes``, ``step_ms`` and the gradient check do (one compile per row:
16-28 s for that program on 2 CPU cores). ``remat_table(plan, not_compiled=reason)`` compiles
nothing and yields the residual columns only, each row saying ``reason``.
"""

from __future__ import annotations

import inspect
import re
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import ad_checkpoint, core, source_info_util

from jaxscope.finite_diff import max_abs_diff_leaves
from jaxscope.internals.calling import CallPlan
from jaxscope.internals.split import Residual, call_with_statics, nbytes
from jaxscope.internals.views import aval_view
from jaxscope.protocol import SourceLoc
from jaxscope.snippet_model import SNIPPET_FILENAME

source_info_util.register_exclusion(__file__)

# Step-time measurement: at most this many timed calls, and stop early past this many seconds.
MAX_REPEATS = 7
TIME_BUDGET_S = 0.25
# At most this many names get a save_any_names_but_these(name) row of their own.
MAX_NAME_ROWS = 3


def policy_names() -> list[tuple[str, list[str]]]:
    """``(name, aliases)`` of each argument-free policy in ``jax.checkpoint_policies``, in
    definition order, aliases (the same object under another name) folded into the first."""
    seen: dict[int, tuple[str, list[str]]] = {}
    for name, value in vars(jax.checkpoint_policies).items():
        if not callable(value) or not _is_policy(value):
            continue
        entry = seen.get(id(value))
        if entry is None:
            seen[id(value)] = (name, [])
        else:
            entry[1].append(name)
    return list(seen.values())


def _is_policy(value: Callable[..., Any]) -> bool:
    """A policy accepts ``**params``; a factory (which needs its own arguments) does not."""
    try:
        params = inspect.signature(value).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _walk(jaxpr: core.Jaxpr) -> Iterator[core.JaxprEqn]:
    for eqn in jaxpr.eqns:
        yield eqn
        for inner in core.jaxprs_in_params(eqn.params):
            yield from _walk(inner)


def checkpoint_names(closed: core.ClosedJaxpr) -> list[str]:
    """The names given with ``checkpoint_name`` in ``closed`` (inner jaxprs included), in order
    of first appearance."""
    out: list[str] = []
    for eqn in _walk(closed.jaxpr):
        if eqn.primitive.name == "name":
            name = str(eqn.params["name"])
            if name not in out:
                out.append(name)
    return out


@dataclass(frozen=True)
class PolicyRow:
    """One row of the table: ``label`` as the user would write it, the policy (``None`` for
    ``jax.checkpoint``'s default), whether ``f`` is checkpointed at all, and aliases."""

    label: str
    policy: Any
    checkpointed: bool
    aliases: tuple[str, ...] = ()


def policy_rows(names: list[str]) -> list[PolicyRow]:
    """``no checkpoint``, each argument-free policy, then the named ones when ``names``."""
    rows = [PolicyRow("no checkpoint", None, False)]
    for name, aliases in policy_names():
        rows.append(PolicyRow(name, getattr(jax.checkpoint_policies, name), True, tuple(aliases)))
    if names:
        quoted = ", ".join(repr(n) for n in names)
        rows.append(
            PolicyRow(
                f"save_only_these_names({quoted})",
                jax.checkpoint_policies.save_only_these_names(*names),
                True,
            )
        )
        for n in names[:MAX_NAME_ROWS]:
            rows.append(
                PolicyRow(
                    f"save_any_names_but_these({n!r})",
                    jax.checkpoint_policies.save_any_names_but_these(n),
                    True,
                )
            )
    return rows


_LOCATION = re.compile(re.escape(SNIPPET_FILENAME) + r":(\d+):(\d+)(?: \(([^)]*)\))?")


def _source_of(text: str) -> SourceLoc | None:
    m = _LOCATION.search(text)
    if m is None:
        return None
    return SourceLoc(line=int(m.group(1)), column=int(m.group(2)), function=m.group(3))


@dataclass(frozen=True)
class GradTarget:
    """The user's call as a function of the floating-point leaves.

    ``call(args, kwargs)`` is the user's call (statics put back); ``float_leaves`` the
    inexact leaves of ``(dyn_args, kwargs)``; ``rebuild(float_leaves)`` the full
    ``(dyn_args, kwargs)`` with the other leaves fixed; ``scalar`` whether the call returns one
    real scalar (else the gradient is that of the sum of its floating-point outputs).
    """

    call: Callable[..., Any]
    dyn_args: tuple[Any, ...]
    kwargs: dict[str, Any]
    float_leaves: list[Any]
    rebuild: Callable[[list[Any]], tuple[Any, Any]]
    scalar: bool

    @property
    def grad_of(self) -> str:
        return "f" if self.scalar else "sum of f's outputs"

    def loss(self, fn: Callable[..., Any]) -> Callable[[list[Any]], Any]:
        """``h(float_leaves) = fn(*rebuild(float_leaves))`` (summed unless a scalar)."""
        scalar = self.scalar

        def h(leaves: list[Any]) -> Any:
            dyn_args, kwargs = self.rebuild(leaves)
            out = fn(dyn_args, kwargs)
            if scalar:
                return out
            parts = [jnp.sum(x) for x in jax.tree.leaves(out) if _is_float(x)]
            return sum(parts[1:], parts[0]) if parts else jnp.zeros(())

        return h


def grad_target(
    plan: CallPlan,
    out_avals: Sequence[Any] | None = None,
    call: Callable[..., Any] | None = None,
) -> GradTarget:
    """Split the traced arguments into the floating-point leaves and the fixed rest.
    ``out_avals``: the call's output avals when the caller traced it already (a jaxpr's
    ``out_avals``), else ``jax.eval_shape`` traces it. ``call``: the user's call the caller
    traced (``call_with_statics(plan)``), else a new one."""
    dyn_args, kwargs = plan.dynamic_args(), dict(plan.kwargs)
    leaves, treedef = jax.tree.flatten((dyn_args, kwargs))
    is_float = [_is_float(x) for x in leaves]
    float_leaves = [x for x, f in zip(leaves, is_float, strict=True) if f]
    call = call_with_statics(plan) if call is None else call
    out = (
        list(out_avals)
        if out_avals is not None
        else jax.tree.leaves(jax.eval_shape(call, dyn_args, kwargs))
    )
    scalar = len(out) == 1 and out[0].shape == () and _is_real(out[0])

    def rebuild(new: list[Any]) -> tuple[Any, Any]:
        it = iter(new)
        full = [next(it) if f else x for x, f in zip(leaves, is_float, strict=True)]
        rebuilt: tuple[Any, Any] = jax.tree.unflatten(treedef, full)  # (dyn_args, kwargs)
        return rebuilt

    return GradTarget(call, dyn_args, kwargs, float_leaves, rebuild, scalar)


def _is_float(x: Any) -> bool:
    return bool(jnp.issubdtype(jax.typeof(x).dtype, np.inexact))


def _is_real(x: Any) -> bool:
    return bool(jnp.issubdtype(x.dtype, np.floating))


def _timed(fn: Callable[[], Any]) -> tuple[float, int]:
    jax.block_until_ready(fn())  # warm-up
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MAX_REPEATS:
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append((time.perf_counter() - t0) * 1e3)
        if time.perf_counter() - start > TIME_BUDGET_S and len(times) >= 3:
            break
    return statistics.median(times), len(times)


@dataclass(frozen=True)
class RematRow:
    """One checkpoint policy measured: the residuals it saves and their bytes, the compiled
    gradient's temp bytes and step time (``None`` with ``not_measured`` saying why, when nothing
    was compiled), the device, what was differentiated, and the gradient's largest difference
    from the un-checkpointed one. The partial_eval probe makes its ``remat_policy_measured``
    event of it (design 0059: the walker returns records, the exhibit builds its events)."""

    index: int
    policy: str
    aliases: list[str]
    saved: list[Residual]
    residual_bytes: int
    temp_bytes: int | None
    step_ms: float | None
    repeats: int
    device: str
    grad_of: str
    grad_max_abs_diff: float | None
    not_measured: str | None = None


def saved(fn: Callable[..., Any], target: GradTarget) -> list[Residual]:
    """``saved_residuals(fn, dyn_args, kwargs)`` as records (JAX's text as the description)."""
    out = []
    for aval, text in ad_checkpoint.saved_residuals(fn, target.dyn_args, target.kwargs):
        out.append(
            Residual(
                aval=aval_view(aval), source=_source_of(text), description=text, bytes=nbytes(aval)
            )
        )
    return out


def checkpointed(row: PolicyRow, target: GradTarget) -> Callable[..., Any]:
    """The user's call under ``row``'s policy (plain, for ``no checkpoint``)."""
    return jax.checkpoint(target.call, policy=row.policy) if row.checkpointed else target.call


def residuals_only(row: PolicyRow, index: int, target: GradTarget, reason: str) -> RematRow:
    """One row without an XLA compile: the saved residuals (partial evaluation only), and
    ``reason`` for the columns that need the compiled gradient (left ``None``)."""
    residuals = saved(checkpointed(row, target), target)
    return RematRow(
        index=index,
        policy=row.label,
        aliases=list(row.aliases),
        saved=residuals,
        residual_bytes=sum(r.bytes for r in residuals),
        temp_bytes=None,
        step_ms=None,
        repeats=0,
        device=str(jax.devices()[0]),
        grad_of=target.grad_of,
        grad_max_abs_diff=None,
        not_measured=reason,
    )


def measure(
    row: PolicyRow, index: int, target: GradTarget, reference: Any | None
) -> tuple[RematRow, Any]:
    """Measure one row: saved residuals, compiled temp bytes, step time, and the gradient
    against ``reference`` (the un-checkpointed gradient; ``None``: this row is it)."""
    fn = checkpointed(row, target)
    residuals = saved(fn, target)
    compiled = jax.jit(jax.grad(target.loss(fn))).lower(target.float_leaves).compile()
    stats = compiled.memory_analysis()
    temp = getattr(stats, "temp_size_in_bytes", None) if stats is not None else None
    grads = compiled(target.float_leaves)
    step_ms, repeats = _timed(lambda: compiled(target.float_leaves))
    device = jax.tree.leaves(grads)[0].devices() if jax.tree.leaves(grads) else set()
    measured = RematRow(
        index=index,
        policy=row.label,
        aliases=list(row.aliases),
        saved=residuals,
        residual_bytes=sum(r.bytes for r in residuals),
        temp_bytes=int(temp) if temp is not None and temp >= 0 else None,
        step_ms=step_ms,
        repeats=repeats,
        device=", ".join(sorted(str(d) for d in device)) or str(jax.devices()[0]),
        grad_of=target.grad_of,
        grad_max_abs_diff=0.0 if reference is None else max_abs_diff_leaves(grads, reference),
    )
    return measured, grads


def primal_jaxpr(call: Callable[..., Any], dyn_args: Any, kwargs: Any) -> core.ClosedJaxpr:
    """A jaxpr of ``call(dyn_args, kwargs)`` for its output avals and checkpoint names:
    ``jax.make_jaxpr(jax.checkpoint(call))``, one ``remat_p`` eqn whose inner jaxpr is f's
    (the same eqns as ``jax.make_jaxpr(call)``'s, names in the same order). ``jax.checkpoint``
    keeps that trace in its cache (``ad_checkpoint._trace_to_jaxpr``, keyed by ``call``, the
    input avals and the debug info, not the policy), so the first checkpointed row's
    ``saved_residuals``, which traces ``jax.checkpoint(call, policy)`` with the same avals, does
    not trace f again (~0.15x ``make_jaxpr(grad(f))`` on bench/ad_overhead.py, design 0082).
    When JAX refuses f under ``jax.checkpoint``, plain ``jax.make_jaxpr(call)``: the rows then
    fail or pass as they did before."""
    try:
        return jax.make_jaxpr(jax.checkpoint(call))(dyn_args, kwargs)
    except Exception:  # the checkpointed row will say why; the table starts as before
        return jax.make_jaxpr(call)(dyn_args, kwargs)


def remat_table(plan: CallPlan, not_compiled: str | None = None) -> Iterator[RematRow]:
    """Yield one measured row per policy (streamed: each as soon as it is measured). With
    ``not_compiled``, nothing is compiled: each row has its saved residuals and that reason."""
    # One trace of f: its jaxpr's output avals are what jax.eval_shape gave (the gradient's
    # target), its eqns name the checkpoint names (a second trace took ~0.2x make_jaxpr(grad)).
    call = call_with_statics(plan)
    primal = primal_jaxpr(call, plan.dynamic_args(), dict(plan.kwargs))
    target = grad_target(plan, primal.out_avals, call)
    rows = policy_rows(checkpoint_names(primal))
    if not_compiled is not None:
        for index, row in enumerate(rows):
            yield residuals_only(row, index, target, not_compiled)
        return
    reference = None
    for index, row in enumerate(rows):
        measured, grads = measure(row, index, target, reference)
        if reference is None:  # the first row, "no checkpoint"
            reference = grads
        yield measured
