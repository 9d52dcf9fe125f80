"""The one jaxpr interpreter of ``jaxscope.internals``: JAX's forward evaluation loop, with a hook.

JAX evaluates a jaxpr with ``core.eval_jaxpr`` (Autodidax's ``eval_jaxpr``): the constvars and
invars are written into an environment, then for each eqn its inputs are read (a ``Literal`` is
its own value), its primitive is bound (``Primitive.get_bind_params``, under
``source_info_util.user_context(eqn.source_info.traceback, name_stack=...)`` and the eqn's
``eqn.ctx.manager``) and its outputs are written. The step-by-step walks need exactly that loop
with something done around each eqn: the JVP and batching walks read the tracers going in and
out and say which eqn is being bound, the NaN walk stops at one eqn or descends into it, the
backward pass's forward half sets up cotangent accumulators instead of binding linear eqns. So
the loop is written once, here (:func:`interpret`), and each walk is an :class:`EqnHook`:

* ``before(index, eqn, invals, env)``: called before the eqn is evaluated; returning ``True``
  stops the walk there (the eqn is not evaluated);
* ``evaluate(index, eqn, invals, env) -> outvals``: how the eqn is evaluated; by default
  :func:`bind_eqn` (as ``core.eval_jaxpr`` binds it); a walk overrides it to bind under its own
  context, to apply a rule instead, or to evaluate an inner jaxpr itself;
* ``after(index, eqn, invals, outvals, env)``: called once the outputs are written; returning
  ``True`` stops the walk there.

Environment: one value per ``core.Var``; a ``core.Literal`` (an input written inline, e.g.
``2.0:f32[]``) is read as its ``val`` and never stored; an output that is a ``core.DropVar``
(``_`` in the printed jaxpr, an output no eqn reads) is stored like any other, as
``core.eval_jaxpr`` and ``ad.backward_pass3`` store it: each ``DropVar`` is its own object, so
nothing collides, and the backward pass pops the cotangent accumulator of every output of a
linear eqn, ``_`` included.

Sub-jaxprs in params (``jit``'s ``jaxpr``, ``cond``'s ``branches``, ``scan``'s body) are the
caller's: the default evaluation binds the eqn whole, as JAX does, and a hook that wants to walk
a body calls :func:`interpret` on it.

Unlike ``core.eval_jaxpr``, the environment is not pruned of dead variables (a walk may read any
value after the eqn that made it) and, under ``jax_enable_checks``, values are not typechecked
against their avals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jax._src import core, source_info_util

source_info_util.register_exclusion(__file__)

# What an interpretation holds: each variable's value.
Env = dict[core.Var, Any]


def read(env: Env, v: core.Atom) -> Any:
    """The value of ``v``: a ``Literal``'s own ``val``, otherwise what ``env`` holds."""
    return v.val if isinstance(v, core.Literal) else env[v]


# Call eqns whose body runs once, on the call's own inputs in order (param name of the body):
# ``jax.checkpoint``'s eqn is ``remat2`` in JAX 0.10.2 (``checkpoint`` in older releases).
CALL_BODIES = {
    "jit": "jaxpr",
    "pjit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "remat2": "jaxpr",
    "checkpoint": "jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
}


def call_body(eqn: core.JaxprEqn) -> tuple[core.Jaxpr, Sequence[Any]] | None:
    """The jaxpr and consts a call eqn (:data:`CALL_BODIES`) runs on its own inputs, whose
    invars are the eqn's invars in order; ``None`` for any other eqn."""
    param = CALL_BODIES.get(eqn.primitive.name)
    inner = eqn.params.get(param) if param else None
    if isinstance(inner, core.ClosedJaxpr):
        jaxpr, consts = inner.jaxpr, inner.consts
    elif isinstance(inner, core.Jaxpr):
        jaxpr, consts = inner, ()
    else:
        return None
    return (jaxpr, consts) if len(jaxpr.invars) == len(eqn.invars) else None


def bind_eqn(eqn: core.JaxprEqn, invals: Sequence[Any]) -> list[Any]:
    """``eqn`` evaluated on ``invals`` as ``core.eval_jaxpr`` evaluates it: its primitive bound
    with ``get_bind_params(eqn.params)`` under the eqn's user traceback and name stack (so eqns
    it emits while tracing carry the user's line) and ``eqn.ctx.manager``; always a list of
    outputs (one for a single-result primitive)."""
    bind_params = eqn.primitive.get_bind_params(eqn.params)
    name_stack = source_info_util.current_name_stack() + eqn.source_info.name_stack
    with (
        source_info_util.user_context(eqn.source_info.traceback, name_stack=name_stack),
        eqn.ctx.manager,
    ):
        ans = eqn.primitive.bind(*invals, **bind_params)
    return list(ans) if eqn.primitive.multiple_results else [ans]


class EqnHook:
    """What a walk does around each eqn (module docstring). This base class does nothing but
    evaluate each eqn with :func:`bind_eqn`: ``interpret(jaxpr, consts, args, EqnHook())`` is
    ``core.eval_jaxpr``."""

    def before(self, index: int, eqn: core.JaxprEqn, invals: list[Any], env: Env) -> bool:
        """Called before eqn ``index`` is evaluated; ``True`` stops the walk before it."""
        del index, eqn, invals, env
        return False

    def evaluate(
        self, index: int, eqn: core.JaxprEqn, invals: list[Any], env: Env
    ) -> Sequence[Any]:
        """The outputs of eqn ``index`` (one per outvar): by default :func:`bind_eqn`."""
        del index, env
        return bind_eqn(eqn, invals)

    def after(
        self, index: int, eqn: core.JaxprEqn, invals: list[Any], outvals: list[Any], env: Env
    ) -> bool:
        """Called after eqn ``index``'s outputs are written; ``True`` stops the walk there."""
        del index, eqn, invals, outvals, env
        return False


@dataclass
class Interpreted:
    """What :func:`interpret` returns: ``outvals`` the jaxpr's outputs (``None`` when the hook
    stopped the walk), ``env`` every value written, ``stopped_at`` the index of the eqn the hook
    stopped at (``None`` when it ran to the end)."""

    outvals: list[Any] | None
    env: Env
    stopped_at: int | None = None


def interpret(
    jaxpr: core.Jaxpr,
    consts: Sequence[Any],
    args: Sequence[Any],
    hook: EqnHook | None = None,
) -> Interpreted:
    """Evaluate ``jaxpr`` on ``consts`` (its constvars) and ``args`` (its invars) eqn by eqn, in
    order, with ``hook`` around each eqn (:class:`EqnHook`; by default each eqn is bound as
    ``core.eval_jaxpr`` binds it). Raises what an eqn's evaluation raises, and ``ValueError``
    when ``consts``/``args`` or an evaluation's outputs do not match the variables in number."""
    hook = EqnHook() if hook is None else hook
    env: Env = {}
    env.update(zip(jaxpr.constvars, consts, strict=True))
    env.update(zip(jaxpr.invars, args, strict=True))
    for index, eqn in enumerate(jaxpr.eqns):
        invals = [read(env, v) for v in eqn.invars]
        if hook.before(index, eqn, invals, env):
            return Interpreted(None, env, index)
        outvals = list(hook.evaluate(index, eqn, invals, env))
        env.update(zip(eqn.outvars, outvals, strict=True))
        if hook.after(index, eqn, invals, outvals, env):
            return Interpreted(None, env, index)
    return Interpreted([read(env, v) for v in jaxpr.outvars], env)


def eval_jaxpr(jaxpr: core.Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
    """``core.eval_jaxpr(jaxpr, consts, *args)`` through :func:`interpret`, no hook."""
    out = interpret(jaxpr, consts, args).outvals
    assert out is not None  # the base hook never stops
    return out
