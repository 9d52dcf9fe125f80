"""Where a bfloat16 or float16 result loses what float32 keeps: ``f`` run eqn by eqn twice, as
written and in float32, and each low-precision result compared with its float32 twin.

A bfloat16 dot of 4,097 ones is 4,096: the dtype holds every whole number only up to 2**8
(float16: 2**11), and a count above that comes back as another whole number. ``(a + b) - a``
in bfloat16 is 0 where float32 gives ``b``. float16 squares of 300 overflow to inf. JAX rounds
as it documents, so nothing raises; the result is just not the number.

How (:func:`precision_losses`): the jaxpr of ``f`` (``jax.make_jaxpr``) is evaluated on the
snippet's arguments twice at once, calls inlined (``interpret.call_body``). The *run* binds
each eqn on the run's own values (what ``f`` computes). The *float32 twin* binds the same eqn on
the twin's values, with every bfloat16/float16 value upcast to float32 and every low-precision
dtype in the eqn's parameters made float32 (``convert_element_type``'s ``new_dtype``, a
``dot_general``'s ``preferred_element_type``, ``iota``'s ``dtype``); ``reduce_precision`` is the
identity there; the bodies of ``scan``, ``while`` and ``cond`` are made float32 twins of their
own (traced again with float32 inputs), so a bfloat16 loop carry is compared as a whole (the
loop is the eqn reported). An eqn the twin still cannot bind in float32 takes the run's result
upcast: the twin is blind there, and no loss is reported.

A low-precision result loses precision when it differs from its twin by more than the dtype's
rounding (:func:`judge`):

* ``overflow``: it is inf or nan where float32 is finite;
* ``whole_number``: float32's result is all whole numbers (a count, a sum of a mask), at least
  one above what the dtype holds exactly (2**8 for bfloat16, 2**11 for float16, below 2**24),
  and the result is another number there;
* ``beyond_rounding``: some element is off by more than :data:`ULPS` units in the last place of
  the dtype at the result's own scale (its largest float32 magnitude). One rounding is half a
  unit; the roundings of a chain add up (measured, design 0062: a 12-layer bfloat16 MLP's
  forward pass within 4.5 units, the backward pass of a 6-layer one within 22), while a
  cancellation (``(a + b) - a``) or an accumulation stuck in low precision is off by hundreds
  or thousands.

Only the *origin* is reported: the first eqn whose result loses precision while none of its
inputs carried an earlier loss (everything computed from a loss differs from float32 too), and
only when a value computed from it reaches an output of ``f``. Each is reported at the user's
line of the eqn with the API called there (``dtype_changes``' frames), and how many eqns of
that line did the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core

from jaxscope.internals.dtype_changes import _api, _Flat, _user_chain
from jaxscope.internals.interpret import bind_eqn, call_body
from jaxscope.internals.views import snippet_source
from jaxscope.protocol import SourceLoc

# Units in the last place (at the result's scale) beyond which a difference is no rounding.
ULPS = 64.0
# Eqns evaluated at most (each is bound twice, eagerly): past this the check is skipped.
MAX_EQNS = 4000

LossKind = Literal["overflow", "whole_number", "beyond_rounding"]
# Primitives that accumulate: their fix is a float32 accumulator (preferred_element_type,
# dtype=), not an upcast of the operands.
ACCUMULATING = frozenset(
    {"dot_general", "reduce_sum", "cumsum", "reduce_prod", "cumprod", "conv_general_dilated"}
)


@dataclass(frozen=True)
class PrecisionLoss:
    """One low-precision result that loses what float32 keeps (module docstring): where
    (``source``, ``api``), which eqn (``primitive``), the result's dtype and type
    (``dtype``, ``type``: ``bf16[]``), how (``kind``), how many of its ``total`` elements
    (``changed``), the first such element (``index``, the run's ``value``, float32's
    ``reference``), and how many eqns at that line did the same (``count``)."""

    source: SourceLoc | None
    api: str
    primitive: str
    dtype: str
    type: str
    kind: LossKind
    changed: int
    total: int
    index: tuple[int, ...]
    value: float
    reference: float
    count: int = 1


def low_precision(dtype: Any) -> bool:
    """A float narrower than float32 (bfloat16, float16, the float8s)."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return False
    return dt.itemsize < 4 and jnp.issubdtype(dt, jnp.floating)


def has_low_precision(closed_jaxpr: core.ClosedJaxpr) -> bool:
    """Whether any value of the jaxpr (calls and control flow included) is bfloat16/float16:
    the check costs nothing for a program without one."""

    def walk(jaxpr: core.Jaxpr) -> bool:
        for v in (*jaxpr.invars, *jaxpr.constvars):
            if low_precision(getattr(v.aval, "dtype", None)):
                return True
        for eqn in jaxpr.eqns:
            if any(low_precision(getattr(v.aval, "dtype", None)) for v in eqn.outvars):
                return True
            for sub in core.jaxprs_in_params(eqn.params):
                if walk(sub):
                    return True
        return False

    return walk(closed_jaxpr.jaxpr)


def _up(x: Any) -> Any:
    """``x`` with a low-precision float dtype as float32 (the twin's value)."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None and low_precision(dtype):
        return jnp.asarray(x, jnp.float32)
    return x


def _twin_params(params: dict[str, Any]) -> dict[str, Any]:
    """The eqn's parameters for the float32 twin: low-precision dtypes made float32, and the
    bodies of control flow (``scan``'s ``jaxpr``, ``while``'s, ``cond``'s ``branches``) made
    their own twins (:func:`_twin_closed`)."""

    def up(v: Any) -> Any:
        if isinstance(v, np.dtype) and low_precision(v):
            return np.dtype(np.float32)
        if isinstance(v, core.ClosedJaxpr):
            return _twin_closed(v)
        if isinstance(v, tuple) and v and all(isinstance(b, core.ClosedJaxpr) for b in v):
            return tuple(_twin_closed(b) for b in v)
        return v

    return {k: up(v) for k, v in params.items()}


def _eval_twin(jaxpr: core.Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """``jaxpr`` evaluated (or traced) as the float32 twin: every eqn bound on upcast operands
    with :func:`_twin_params`, calls inlined, ``reduce_precision`` the identity."""
    env: dict[Any, Any] = {}
    for v, c in zip(jaxpr.constvars, consts, strict=True):
        env[v] = _up(c)
    for v, a in zip(jaxpr.invars, args, strict=True):
        env[v] = a
    for eqn in jaxpr.eqns:
        ins = [_up(_read(env, a)) for a in eqn.invars]
        found = call_body(eqn)
        if found is not None:
            outs = _eval_twin(found[0], found[1], ins)
        elif eqn.primitive.name == "reduce_precision":
            outs = ins[:1]
        else:
            outs = bind_eqn(eqn.replace(params=_twin_params(eqn.params)), ins)
        for v, o in zip(eqn.outvars, outs, strict=True):
            env[v] = o
    return [_up(_read(env, a)) for a in jaxpr.outvars]


def _twin_closed(closed: core.ClosedJaxpr) -> core.ClosedJaxpr:
    """The float32 twin of a control-flow body: :func:`_eval_twin` traced on its inputs'
    avals with low-precision floats made float32."""
    avals = [
        jax.ShapeDtypeStruct(
            v.aval.shape, np.dtype(np.float32) if low_precision(v.aval.dtype) else v.aval.dtype
        )
        for v in closed.jaxpr.invars
    ]
    twin: core.ClosedJaxpr = jax.make_jaxpr(
        lambda *xs: _eval_twin(closed.jaxpr, closed.consts, xs)
    )(*avals)
    return twin


def judge(value: Any, reference: Any, dtype: Any) -> tuple[LossKind, np.ndarray] | None:
    """How ``value`` (a result of low-precision ``dtype``) loses what ``reference`` (the same
    computation in float32) keeps, and where (a bool mask); None when it differs by no more
    than the dtype's rounding (module docstring)."""
    low = np.asarray(value, np.float64)
    ref = np.asarray(reference, np.float64)
    if low.shape != ref.shape or low.size == 0:
        return None
    finite = np.isfinite(ref)
    overflow = ~np.isfinite(low) & finite
    if overflow.any():
        return "overflow", overflow
    info = jnp.finfo(dtype)
    exact = 2.0 ** (int(info.nmant) + 1)  # every whole number up to here is held exactly
    if finite.all() and np.all(ref == np.round(ref)) and np.any(np.abs(ref) > exact):
        lost = (low != ref) & (np.abs(ref) <= 2.0**24)
        if lost.any():
            return "whole_number", lost
    scale = float(np.max(np.abs(ref[finite]))) if finite.any() else 0.0
    if scale == 0.0:
        return None
    # the dtype's unit in the last place at ``scale`` (its exponent's step, no subnormals)
    ulp = 2.0 ** (max(np.floor(np.log2(scale)), int(info.minexp)) - int(info.nmant))
    far = finite & (np.abs(low - ref) > ULPS * ulp)
    return ("beyond_rounding", far) if far.any() else None


@dataclass
class _Walk:
    """The evaluation's state: the origins found (by key), and each var's origins."""

    found: dict[tuple[int | None, str, str], PrecisionLoss]
    order: list[tuple[int | None, str, str]]
    limit: int
    eqns: int = 0


def _read(env: dict[Any, Any], atom: Any) -> Any:
    return atom.val if isinstance(atom, core.Literal) else env[atom]


def _walk(
    jaxpr: core.Jaxpr,
    consts: Sequence[Any],
    run_in: Sequence[Any],
    twin_in: Sequence[Any],
    taint_in: Sequence[frozenset[tuple[int | None, str, str]]],
    enclosing: tuple[core.JaxprEqn, ...],
    state: _Walk,
) -> tuple[list[Any], list[Any], list[frozenset[tuple[int | None, str, str]]]]:
    run: dict[Any, Any] = {}
    twin: dict[Any, Any] = {}
    taint: dict[Any, frozenset[tuple[int | None, str, str]]] = {}
    for v, c in zip(jaxpr.constvars, consts, strict=True):
        run[v], twin[v], taint[v] = c, _up(c), frozenset()
    for v, r, t, o in zip(jaxpr.invars, run_in, twin_in, taint_in, strict=True):
        run[v], twin[v], taint[v] = r, t, o
    for eqn in jaxpr.eqns:
        state.eqns += 1
        if state.eqns > MAX_EQNS:
            raise _TooBig
        runs = [_read(run, a) for a in eqn.invars]
        twins = [_up(_read(twin, a)) for a in eqn.invars]
        came = frozenset().union(
            *(taint.get(a, frozenset()) for a in eqn.invars if not isinstance(a, core.Literal))
        )
        found = call_body(eqn)
        if found is not None:
            body, body_consts = found
            outs = _walk(
                body,
                body_consts,
                runs,
                twins,
                [
                    taint.get(a, frozenset()) if not isinstance(a, core.Literal) else frozenset()
                    for a in eqn.invars
                ],
                (*enclosing, eqn),
                state,
            )
            for v, r, t, o in zip(eqn.outvars, *outs, strict=True):
                run[v], twin[v], taint[v] = r, t, o
            continue
        if eqn.effects:
            # a callback must not run again: one with no result (jax.debug.print) is skipped,
            # one whose result the program uses (io_callback) stops the check
            if eqn.outvars:
                raise _TooBig
            continue
        run_out = bind_eqn(eqn, runs)
        if eqn.primitive.name == "reduce_precision":
            twin_out = list(twins)
        else:
            try:
                twin_out = bind_eqn(eqn.replace(params=_twin_params(eqn.params)), twins)
            except Exception:  # dtypes fixed inside (a scan's body): the twin is blind here
                twin_out = [_up(r) for r in run_out]
        for v, r, t in zip(eqn.outvars, run_out, twin_out, strict=True):
            run[v], twin[v], taint[v] = r, t, came
            dtype = getattr(v.aval, "dtype", None)
            if came or not low_precision(dtype) or np.shape(r) != np.shape(t):
                continue
            verdict = judge(r, t, dtype)
            if verdict is not None:
                key = _record(eqn, enclosing, v, r, t, verdict, state)
                if key is not None:
                    taint[v] = frozenset({key})
    return (
        [_read(run, a) for a in jaxpr.outvars],
        [_read(twin, a) for a in jaxpr.outvars],
        [
            taint.get(a, frozenset()) if not isinstance(a, core.Literal) else frozenset()
            for a in jaxpr.outvars
        ],
    )


class _TooBig(Exception):
    """More eqns than :data:`MAX_EQNS`, or an eqn with effects (a callback)."""


def _record(
    eqn: core.JaxprEqn,
    enclosing: tuple[core.JaxprEqn, ...],
    var: Any,
    value: Any,
    reference: Any,
    verdict: tuple[LossKind, np.ndarray],
    state: _Walk,
) -> tuple[int | None, str, str] | None:
    kind, where = verdict
    chain, traceback = _user_chain(_Flat(eqn, [], [], (), enclosing))
    source = snippet_source(traceback)
    key = (source.line if source else None, eqn.primitive.name, kind)
    if key in state.found:
        loss = state.found[key]
        state.found[key] = replace(loss, count=loss.count + 1)
        return key
    if len(state.found) >= state.limit:
        return None
    index = tuple(int(i) for i in np.argwhere(where)[0])
    low = np.asarray(value, np.float64)
    ref = np.asarray(reference, np.float64)
    state.found[key] = PrecisionLoss(
        source=source,
        api=_api(chain, source),
        primitive=str(eqn.primitive.name),
        dtype=np.dtype(var.aval.dtype).name,
        type=str(var.aval.str_short(short_dtypes=True)),
        kind=kind,
        changed=int(np.count_nonzero(where)),
        total=int(low.size),
        index=index,
        value=float(low[index]),
        reference=float(ref[index]),
    )
    state.order.append(key)
    return key


def precision_losses(
    closed_jaxpr: core.ClosedJaxpr, args: Sequence[Any], limit: int = 20
) -> list[PrecisionLoss] | None:
    """The origins of precision lost in ``f``'s low-precision results (module docstring), in
    eqn order, on ``args`` (the flat leaves ``closed_jaxpr`` takes); at most ``limit``. None
    when the jaxpr is too big to evaluate twice (:data:`MAX_EQNS`) or has an eqn with effects
    (a callback would run again)."""
    if not has_low_precision(closed_jaxpr):
        return []
    jaxpr = closed_jaxpr.jaxpr
    state = _Walk(found={}, order=[], limit=limit)
    try:
        _, _, taints = _walk(
            jaxpr,
            closed_jaxpr.consts,
            list(args),
            [_up(a) for a in args],
            [frozenset()] * len(args),
            (),
            state,
        )
    except _TooBig:
        return None
    reached = frozenset().union(*taints)
    return [state.found[k] for k in state.order if k in reached]
