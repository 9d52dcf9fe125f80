"""The forward side of a NaN found in the backward pass (nan_finder exhibit).

The transpose walk (``jaxscope.internals.transpose_walk``) names the primal primitive whose JVP
emitted the linear eqn where a cotangent first became NaN or Inf, and that eqn's user frame. This
module finds the same primal eqn in ``jax.make_jaxpr(fun)(*args)`` (same primitive name, same user
frame: line, column, end line and end column, from ``eqn.source_info``) and evaluates the primal
jaxpr on the concrete arguments up to it, eqn by eqn with ``eqn.primitive.bind`` (as
``jax.core.eval_jaxpr`` does: ``jaxscope.internals.interpret``, its hook stopping there), to give
that eqn's forward output. So the exhibit can say whether the forward value was already NaN/Inf
(what ``jax_debug_nans`` stops at) or only the cotangent.

Top-level eqns are searched, and the bodies of call-like eqns on the way to it, each evaluated
on that eqn's inputs: a ``jit`` eqn's body (a jitted helper of the user's; a ``jax.checkpoint``'s
body, ``remat2``, likewise), the branch a ``cond``
took (``branches[index]``, the index clamped as ``cond`` clamps it), and a ``scan`` body at one
iteration (the carry run forward to it with ``jax.core.eval_jaxpr``-style evaluation, that
iteration's slice of ``xs``): the nan_finder descends into the backward passes of all three. An
eqn that is not found, whose user frame matches several eqns (a Python loop, a helper called
twice), that sits in a branch ``cond`` did not take, or inside a scan whose iteration is not
given, gives ``None``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax._src import core, source_info_util
from jax._src.interpreters import ad

from jaxscope.internals.custom_rules import code_line, return_source
from jaxscope.internals.interpret import Env, EqnHook, interpret
from jaxscope.internals.transpose_walk import is_nonfinite
from jaxscope.internals.views import snippet_source
from jaxscope.protocol import SourceLoc

source_info_util.register_exclusion(__file__)


def _same_frame(a: SourceLoc | None, b: SourceLoc) -> bool:
    return a is not None and (a.line, a.column, a.end_line, a.end_column) == (
        b.line,
        b.column,
        b.end_line,
        b.end_column,
    )


def _bodies(eqn: core.JaxprEqn) -> list[core.ClosedJaxpr]:
    """The jaxprs a call-like eqn runs: ``jit``'s body, every ``cond`` branch, ``scan``'s body,
    a ``jax.checkpoint``'s (``remat2``: an open jaxpr without constvars)."""
    name = eqn.primitive.name
    if name == "cond":
        return list(eqn.params["branches"])
    inner = eqn.params.get("jaxpr") if name in ("jit", "scan", "remat2") else None
    if name == "remat2" and isinstance(inner, core.Jaxpr) and not inner.constvars:
        inner = core.ClosedJaxpr(inner, [])
    return [inner] if isinstance(inner, core.ClosedJaxpr) else []


def _eval(closed: core.ClosedJaxpr, inputs: Sequence[Any]) -> list[Any]:
    return list(core.eval_jaxpr(closed.jaxpr, closed.consts, *inputs))


def primal_output(
    fun: Callable[..., Any],
    args: Sequence[Any],
    primitive: str,
    source: SourceLoc,
    iterations: Sequence[int] = (),
) -> Any | None:
    """The output (the first outvar's value) at ``args`` of the unique eqn of
    ``jax.make_jaxpr(fun)(*args)`` (top level, or inside ``jit``/``cond``/``scan``/``remat2``
    eqns) whose primitive is ``primitive`` and whose user frame is ``source``; ``iterations``
    gives, outermost first, the iteration (index along the scanned axis) of each ``scan`` on the
    way to it. For an eqn inside a scan body the value is that iteration's. ``None`` when there
    is no such eqn, more than one, it sits in a ``cond`` branch not taken, or ``iterations`` does
    not give one iteration per enclosing scan (in range)."""
    closed = jax.make_jaxpr(fun)(*args)

    def direct(eqn: core.JaxprEqn) -> bool:
        return eqn.primitive.name == primitive and _same_frame(
            snippet_source(eqn.source_info.traceback), source
        )

    def count(jaxpr: core.Jaxpr) -> int:
        n = 0
        for eqn in jaxpr.eqns:
            n += 1 if direct(eqn) else sum(count(b.jaxpr) for b in _bodies(eqn))
        return n

    if count(closed.jaxpr) != 1:
        return None
    pending = list(iterations)

    def enter(eqn: core.JaxprEqn, ins: list[Any]) -> Any | None:
        """Evaluate the body of ``eqn`` holding the eqn, on ``eqn``'s inputs ``ins``."""
        name = eqn.primitive.name
        if name in ("jit", "remat2"):
            return run(_bodies(eqn)[0], ins)
        if name == "cond":
            branches = eqn.params["branches"]
            index = min(max(int(ins[0]), 0), len(branches) - 1)  # cond clamps its index
            taken = branches[index]
            return run(taken, ins[1:]) if count(taken.jaxpr) == 1 else None
        # scan: invars are consts, initial carry, xs; the body maps consts, carry, x to carry, y.
        body = eqn.params["jaxpr"]
        n_consts, n_carry = eqn.params["num_consts"], eqn.params["num_carry"]
        length = int(eqn.params["length"])
        if not pending or not 0 <= pending[0] < length:
            return None
        k = pending.pop(0)
        consts, carry = ins[:n_consts], ins[n_consts : n_consts + n_carry]
        xs = ins[n_consts + n_carry :]
        order = range(length - 1, -1, -1) if eqn.params["reverse"] else range(length)
        for i in order:
            x = [xi[i] for xi in xs]
            if i == k:
                return run(body, [*consts, *carry, *x])
            carry = _eval(body, [*consts, *carry, *x])[:n_carry]
        return None  # pragma: no cover - k is in range

    class ToTarget(EqnHook):
        """Evaluates eqns up to the target: stops at the eqn whose body holds it (entering that
        body instead of binding the eqn) or at the target itself (its first output kept)."""

        found: Any | None = None

        def before(self, index: int, eqn: core.JaxprEqn, invals: list[Any], env: Env) -> bool:
            if not direct(eqn) and sum(count(b.jaxpr) for b in _bodies(eqn)) == 1:
                self.found = enter(eqn, invals)
                return True
            return False

        def after(
            self, index: int, eqn: core.JaxprEqn, invals: list[Any], outvals: list[Any], env: Env
        ) -> bool:
            if direct(eqn):
                self.found = outvals[0]
                return True
            return False

    def run(closed: core.ClosedJaxpr, inputs: Sequence[Any]) -> Any | None:
        hook = ToTarget()
        interpret(closed.jaxpr, closed.consts, inputs, hook)
        return hook.found

    return run(closed, jax.tree.leaves(tuple(args)))


@dataclass(frozen=True)
class CustomBwd:
    """The user's ``custom_vjp`` backward rule behind a ``custom_lin`` eqn: ``name`` (JAX's
    ``debug_info.func_name``), ``line`` its ``def`` line in the snippet (``None`` when it is not
    defined in the snippet); ``first_bad`` the first eqn of its trace, run on the step's residuals
    and cotangents, whose output holds a NaN or an Inf (its primitive and user line; ``None``
    when no top-level eqn's does, e.g. the bad value came in with the residuals)."""

    name: str
    line: int | None
    first_bad: tuple[str, SourceLoc | None] | None


def _bwd_function(eqn: core.JaxprEqn) -> Any:
    """The user's ``bwd`` behind a ``custom_lin`` eqn (unwrapped from JAX's ``WrappedFun``)."""
    return inspect.unwrap(getattr(eqn.params["bwd"], "f", None) or (lambda: None))


def custom_bwd_return(eqn: core.JaxprEqn) -> SourceLoc | None:
    """Where the user's ``bwd`` behind a ``custom_lin`` eqn returns (``custom_rules
    .return_source``, as the custom_vjp exhibit points at it): JAX checks the structure of what
    it returned after it returned, so JAX's own traceback ends at the call in ``f``. ``None``
    for another eqn, or a ``bwd`` not defined in the snippet."""
    if eqn.primitive.name != "custom_lin":
        return None
    return return_source(_bwd_function(eqn))


def custom_bwd(eqn: core.JaxprEqn, args: Sequence[Any], cts: Sequence[Any]) -> CustomBwd | None:
    """The :class:`CustomBwd` of a ``custom_lin`` eqn (``None`` for other eqns) whose transpose
    ran with ``args`` (its residuals first, ``num_res`` of them) and output cotangents ``cts``.
    ``custom_lin``'s transpose (``ad._custom_lin_transpose``) calls ``bwd.call_wrapped(*res,
    *cts)``; here the same call is traced with ``make_jaxpr`` and evaluated eqn by eqn."""
    if eqn.primitive.name != "custom_lin":
        return None
    bwd = eqn.params["bwd"]
    debug = getattr(bwd, "debug_info", None)
    name = str(getattr(debug, "func_name", None) or "bwd")
    line = code_line(_bwd_function(eqn))
    res = list(args[: eqn.params["num_res"]])
    cts_in = [ad.instantiate_zeros(c) for c in cts]
    try:
        closed = jax.make_jaxpr(lambda *a: bwd.call_wrapped(*a))(*res, *cts_in)
    except Exception:  # the rule ran in the walk; a failing re-trace only loses the detail
        return CustomBwd(name, line, None)
    hook = _FirstNonfinite()
    interpret(closed.jaxpr, closed.consts, jax.tree.leaves((res, cts_in)), hook)
    return CustomBwd(name, line, hook.found)


class _FirstNonfinite(EqnHook):
    """Stops at the first eqn one of whose outputs holds a NaN or an Inf, noting its primitive
    and user line (``found``)."""

    found: tuple[str, SourceLoc | None] | None = None

    def after(
        self, index: int, eqn: core.JaxprEqn, invals: list[Any], outvals: list[Any], env: Env
    ) -> bool:
        if any(is_nonfinite(o) for o in outvals):
            self.found = (eqn.primitive.name, snippet_source(eqn.source_info.traceback))
            return True
        return False
