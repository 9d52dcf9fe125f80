"""Where ``f`` silently widens the dtype of its data: the implicit promotions of a jaxpr.

``x_bf16 * jnp.float32(2.0)`` computes in float32 from that line on; under ``jax_enable_x64`` a
``np.float64`` constant turns float32 params into float64; ``i / 2`` turns an int array into
floats. JAX records each as a ``convert_element_type`` eqn, indistinguishable in the jaxpr from
one the user asked for (``x.astype``) or that a library makes and undoes (``jnp.mean`` of
bfloat16 accumulates in float32 and converts back). A conversion counts here when:

* it widens a float derived from ``f``'s arguments (not a constant) to a wider float
  (``bf16``/``f16`` -> ``f32``, ``f32`` -> ``f64``) or to complex. An integer made float
  (``image / 255``, ``jnp.mean`` of ints) is left out: that is what the user wrote, in NumPy's
  semantics too, and flagging it would bury the widenings nobody asked for;
* nothing in the call chain between the conversion and the user's line asked for it: no
  ``astype``/``asarray``/``array``/``convert_element_type`` frame, unless a ``promote_dtypes``
  (JAX's) or ``promote_dtype`` (Flax's) frame is there: those are the promotion itself;
* it lasts: a value of the wider dtype computed from it reaches one of ``f``'s outputs (the
  library's accumulate-and-convert-back never does);
* it met an operand of the wider dtype (past broadcasts and reshapes): promotion is the join of
  two operands' dtypes, so a conversion that meets none was asked for by a ``dtype=``
  argument (``jnp.sum(x, dtype=jnp.float32)``, ``jnp.mean``'s, ``jnp.cumsum``'s), whose frame
  looks the same as a promotion's.

A promotion whose wider operand was made wide on purpose (an explicit ``astype``, a ``dtype=``
argument, a ``dot_general``/``conv`` of low-precision floats with ``preferred_element_type``, a
wider float initial loop carry over low-precision data, or a value computed from one of these
in its dtype, also through a ``cond``'s branches or a loop's body: :func:`_on_purpose`,
:func:`_scan_bodies`) is still listed, marked ``deliberate``: the user chose the wider dtype,
so narrowing that operand would undo the choice (``docs/design/0062``).

The jaxpr is read with calls inlined (``jit``, ``closed_call``, ``custom_jvp_call``,
``custom_vjp_call``, ``jax.checkpoint``'s ``remat2``: ``interpret.call_body``; their bodies' vars
are mapped to the caller's); the branches of a ``cond`` and the bodies of ``scan``/``while`` are
read as the top level is (:func:`_scan_bodies`): a widening there is reported at the user's line
in the body, and what the eqn's output then meets is its consequence. Frames come
from ``eqn.source_info.traceback``: a jitted ``jnp`` function whose body JAX inlined carries the
caller's traceback, so the frame just inside the user's line names the API the user called. The
body of a ``jit`` eqn (``jnp.where``'s ``_where``, ``jnp.clip``, ``jnp.interp``,
``jax.nn.standardize``) carries a traceback JAX cut short at that ``jit``: its eqns take the line
and the outer frames of the innermost enclosing call eqn that has a snippet frame. Where the
frames name only JAX's call machinery (``jnp.clip``, ``jnp.dot`` and the ``jnp`` ufuncs leave no
frame of their own), the API is the callee written at the line's call expression.
"""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax._src import core

from jaxscope.internals.interpret import call_body
from jaxscope.internals.views import snippet_source
from jaxscope.protocol import SourceLoc
from jaxscope.snippet_model import SNIPPET_FILENAME

# Frames that ask for a conversion by name, and the frames of the promotion itself.
_EXPLICIT = frozenset({"astype", "asarray", "array", "convert_element_type"})
_PROMOTION = ("promote_dtypes", "promote_dtype", "_promote")
# Single-operand eqns that move or copy a value without computing with it.
_RESHAPES = frozenset(
    {"broadcast_in_dim", "reshape", "squeeze", "expand_dims", "transpose", "copy"}
)
_OPERATORS = {
    "mul": "*",
    "truediv": "/",
    "add": "+",
    "sub": "-",
    "pow": "**",
    "matmul": "@",
    "floordiv": "//",
    "mod": "%",
}


@dataclass(frozen=True)
class Promotion:
    """One implicit, lasting widening (module docstring): the user's line (``source``), the
    API the user called there (``api``: ``*`` for ``_operator_mul``, else the function's name),
    the value's type before and after (``from_type``/``to_type`` as a jaxpr writes them, e.g.
    ``bf16[4,8]``), the operand it met (``partner``: its type and ``argument``/``constant``/
    ``computed``; ``None`` when the first eqn that read it had no other operand) and how many
    eqns at that line made the same change (``count``)."""

    source: SourceLoc | None
    api: str
    from_dtype: str
    to_dtype: str
    from_type: str
    to_type: str
    partner: str | None
    count: int = 1
    # the wider operand was made wide on purpose (:func:`_on_purpose`): the user chose the
    # wider dtype there, so the promotion is not a finding and the narrow side is to be upcast
    deliberate: bool = False


@dataclass
class _Flat:
    eqn: core.JaxprEqn
    ins: list[object | None]  # the key of each operand (None: a constant)
    outs: list[object]
    calls: tuple[str, ...] = ()  # the primitives of the calls it was inlined from, outermost first
    # the call eqns it was inlined from, outermost first: where a body's eqn whose traceback JAX
    # cut short (no snippet frame) was called from
    enclosing: tuple[core.JaxprEqn, ...] = ()


def _flatten(
    jaxpr: core.Jaxpr,
    env: dict[Any, object | None],
    out: list[_Flat],
    calls: tuple[str, ...] = (),
    enclosing: tuple[core.JaxprEqn, ...] = (),
) -> None:
    for v in jaxpr.constvars:
        env[v] = None
    for eqn in jaxpr.eqns:
        ins = [None if isinstance(a, core.Literal) else env.get(a) for a in eqn.invars]
        found = call_body(eqn)
        if found is not None:
            body, _ = found
            inner: dict[Any, object | None] = dict(zip(body.invars, ins, strict=True))
            _flatten(body, inner, out, (*calls, str(eqn.primitive.name)), (*enclosing, eqn))
            for o, bo in zip(eqn.outvars, body.outvars, strict=True):
                env[o] = None if isinstance(bo, core.Literal) else inner.get(bo)
            continue
        # A constant broadcast or reshaped is still a constant (jnp.where broadcasts its
        # np.float32 scalar inside its jit before the join).
        moved_constant = eqn.primitive.name in _RESHAPES and ins == [None]
        for o in eqn.outvars:
            env[o] = None if moved_constant else o
        out.append(_Flat(eqn, ins, list(eqn.outvars), calls, enclosing))


def _floating(d: np.dtype[Any]) -> bool:
    return bool(np.issubdtype(d, np.floating)) or "float" in d.name  # ml_dtypes: bfloat16


def _widens(old: np.dtype[Any], new: np.dtype[Any]) -> bool:
    return _floating(old) and ((_floating(new) and new.itemsize > old.itemsize) or new.kind == "c")


def _chain(eqn: core.JaxprEqn) -> tuple[list[tuple[str, str]], bool]:
    """The frames between the eqn and the user's innermost line (innermost first, as
    ``(qualified function name, file)``), and whether a user line was found."""
    tb = eqn.source_info.traceback
    if tb is None:
        return [], False
    codes, _ = tb.raw_frames()
    chain: list[tuple[str, str]] = []
    for code in codes:
        if code.co_filename == SNIPPET_FILENAME:
            return chain, True
        chain.append((code.co_qualname, code.co_filename))
    return chain, False


def _user_chain(item: _Flat) -> tuple[list[tuple[str, str]], Any]:
    """The frames between ``item``'s eqn and the user's line (:func:`_chain`), and the
    traceback that reaches the user's line (``None`` when none does).

    JAX traces the body of a ``jnp`` function that is itself a ``jit`` (``jnp.where``'s
    ``_where``, ``jnp.clip``) with a traceback cut short at the ``jit``: its eqns name no
    snippet frame. Their user line is the one of the innermost enclosing call eqn that has
    one, and their chain continues into that eqn's frames (which name the API called)."""
    chain, has_user = _chain(item.eqn)
    if has_user:
        return chain, item.eqn.source_info.traceback
    for outer in reversed(item.enclosing):
        more, has_user = _chain(outer)
        chain = chain + more
        if has_user:
            return chain, outer.source_info.traceback
    return chain, None


_WRAPPERS = frozenset(
    {"op", "wrapper", "wrapped", "inner", "reraise_with_filtered_traceback", "cache_miss"}
)
# Frames of JAX's own call machinery: the API the user called is not among the chain's frames
# (a jitted jnp function such as jnp.clip or jnp.dot: JAX's traceback keeps no frame of it; a
# jnp ufunc such as jnp.maximum: its frame is the ufunc class's __call__).
_MACHINERY = frozenset({"_run_python_pjit", "ufunc.__call__", "Primitive.bind"})
_CALLEE = re.compile(r"[A-Za-z_][\w.]*")


def _callee(source: SourceLoc | None) -> str | None:
    """The name the user called at ``source`` (the call expression's columns on its line, as
    Python's code positions give them: ``jnp.clip(x, lo, hi)`` -> ``jnp.clip``); ``None``
    when the text there is not a call of a dotted name."""
    if source is None or source.column is None or source.end_line not in (None, source.line):
        return None
    text = linecache.getline(SNIPPET_FILENAME, source.line)[source.column : source.end_column]
    callee = text.split("(", 1)[0].strip() if "(" in text else ""
    return callee if _CALLEE.fullmatch(callee) else None


def _api(chain: list[tuple[str, str]], source: SourceLoc | None = None) -> str:
    """The API the user called at the line (the outermost frame of the chain that is not a
    wrapper), in the user's words: ``*`` for ``_operator_mul``, else its qualified name; where
    that frame is JAX's call machinery, the callee written at ``source`` (:func:`_callee`)."""
    for qualname, _ in reversed(chain):
        name = qualname.rsplit(".", 1)[-1]
        if name.startswith("_operator_"):
            op = name.removeprefix("_operator_")
            op = op if op in _OPERATORS else op.removeprefix("r")
            return _OPERATORS.get(op, name)
    for qualname, _ in reversed(chain):
        name = qualname.rsplit(".", 1)[-1]
        if name not in _WRAPPERS and "<locals>" not in qualname.rsplit(".", 1)[0]:
            if qualname in _MACHINERY:
                return _callee(source) or qualname
            return qualname
    return _callee(source) or "?"


def _implicit(chain: list[tuple[str, str]]) -> bool:
    names = [n.rsplit(".", 1)[-1] for n, _ in chain]
    if any(n.startswith(_PROMOTION) for n in names):
        return True
    return not any(n in _EXPLICIT or n.endswith("convert_element_type") for n in names) and not any(
        f.endswith("scalar_types.py") for _, f in chain
    )


def _short(aval: Any) -> str:
    return str(aval.str_short(short_dtypes=True))


def _spread(flat: list[_Flat], start: int, key: object, dtype: Any) -> set[object]:
    """The values of ``dtype`` computed from ``key`` (written by ``flat[start]``), ``key``
    included: where the wider dtype spread."""
    frontier = {key}
    for item in flat[start + 1 :]:
        if any(k is not None and k in frontier for k in item.ins):
            frontier.update(o for o in item.outs if getattr(o.aval, "dtype", None) == dtype)  # type: ignore[attr-defined]
    return frontier


def _origin(key: object | None, args: set[object]) -> str:
    return "constant" if key is None else "argument" if key in args else "computed"


def _widened_operand(item: _Flat, tainted: set[object]) -> tuple[Any, Any] | None:
    """``(operand, output)`` of an eqn that widens a value derived from the arguments: a
    ``convert_element_type``, or an eqn whose operands have different dtypes and whose output
    has the wider one (``dot_general`` of bfloat16 and float32 converts nothing: its
    ``preferred_element_type`` is float32)."""
    eqn = item.eqn
    if eqn.primitive.name == "convert_element_type":
        return (eqn.invars[0], eqn.outvars[0]) if item.ins[0] in tainted else None
    if call_body(eqn) is not None or len(eqn.outvars) != 1 or len(eqn.invars) < 2:
        return None
    if any(True for _ in core.jaxprs_in_params(eqn.params)):
        # control flow (scan, while, cond): operands of different dtypes are its carry and
        # its inputs, not the two sides of a join (a float32 carry summing bfloat16 steps)
        return None
    out = eqn.outvars[0]
    dtype = getattr(out.aval, "dtype", None)
    dtypes = {getattr(a.aval, "dtype", None) for a in eqn.invars}
    if dtype is None or dtype not in dtypes or len(dtypes) < 2:
        return None
    for a, k in zip(eqn.invars, item.ins, strict=True):
        if k is not None and k in tainted and getattr(a.aval, "dtype", dtype) != dtype:
            return a, out
    return None


def _partner(
    flat: list[_Flat], start: int, operand: Any, key: object, dtype: Any
) -> tuple[Any, object | None] | None:
    """The operand of ``dtype`` that the widened value met: in the widening eqn itself (a mixed
    ``dot_general``), else in the first eqn that read the converted value ``key`` (past
    broadcasts and reshapes of it); ``None`` when it met none."""
    item = flat[start]
    if item.eqn.primitive.name == "convert_element_type":
        at = start
        while True:  # past the broadcasts and reshapes a promotion makes before the join
            at = next((j for j in range(at + 1, len(flat)) if key in flat[j].ins), -1)
            if at < 0:
                return None
            item = flat[at]
            if item.eqn.primitive.name not in _RESHAPES or len(item.outs) != 1:
                break
            key = item.outs[0]
    for atom, k in zip(item.eqn.invars, item.ins, strict=True):
        if atom is not operand and k is not key and getattr(atom.aval, "dtype", None) == dtype:
            return atom, k
    return None


_ACCUMULATES = frozenset({"dot_general", "conv_general_dilated"})


def _float(d: Any) -> bool:
    """``d`` is a float dtype (bfloat16 included; None, a PRNG key's or a token's: no)."""
    try:
        return d is not None and _floating(np.dtype(d))
    except TypeError:  # an extended dtype (a typed PRNG key) numpy does not know
        return False


def _low_float(d: Any) -> bool:
    return _float(d) and np.dtype(d).itemsize < 4


def _on_purpose(flat: list[_Flat], i: int, tainted: set[object], wide: set[object]) -> set[object]:
    """The outputs of ``flat[i]`` made wide on purpose, given ``wide``, those of the eqns
    before it: an explicit widening (``x.astype(jnp.float32)``, or a conversion that meets no
    operand: a ``dtype=`` argument, ``jnp.sum(x, dtype=jnp.float32)``), a ``dot_general``/
    ``conv`` of low-precision floats returning a wider float (``preferred_element_type``), a
    loop or ``cond`` whose carry is wider than the low-precision data it reads (the float32
    carry precision advice asks for); then whatever of the same wide dtype is computed from
    such a value. A float32 argument or constant is not on purpose: the promotion it causes is
    the one this module reports."""
    item = flat[i]
    eqn = item.eqn
    outs: set[object] = set()
    read = [
        (getattr(a.aval, "dtype", None), k)
        for a, k in zip(eqn.invars, item.ins, strict=True)
        if k is not None and k in tainted
    ]
    for d, k in read:  # computed from a value made wide on purpose, in its dtype
        if k in wide:
            outs.update(o for o in item.outs if getattr(o.aval, "dtype", None) == d)  # type: ignore[attr-defined]
    out_dtypes = [getattr(o.aval, "dtype", None) for o in item.outs]  # type: ignore[attr-defined]
    name = eqn.primitive.name
    if name == "convert_element_type" and read:
        old = getattr(eqn.invars[0].aval, "dtype", None)
        new = out_dtypes[0]
        if _float(old) and _float(new) and _widens(np.dtype(old), np.dtype(new)):
            chain, _ = _user_chain(item)
            if not _implicit(chain) or _partner(flat, i, eqn.invars[0], item.outs[0], new) is None:
                outs.add(item.outs[0])
    elif name in _ACCUMULATES and len(item.outs) == 1:
        floats = [d for a in eqn.invars if _float(d := getattr(a.aval, "dtype", None))]
        wider = _float(out_dtypes[0]) and not _low_float(out_dtypes[0])
        if floats and all(_low_float(d) for d in floats) and wider:
            outs.add(item.outs[0])
    elif (
        any(True for _ in core.jaxprs_in_params(eqn.params))
        and call_body(eqn) is None
        and name not in _CONTROL_FLOW
    ):
        # another eqn with inner jaxprs, not looked into (``cond``/``scan``/``while`` are read
        # through their bodies: :func:`_bodies`)
        low = [d for d, _ in read if _low_float(d)]
        # a wider float read from the arguments (not made wide on purpose) is not the user's
        # choice of carry
        other = [k for d, k in read if _float(d) and not _low_float(d)]
        if low and all(k in wide for k in other):
            outs.update(
                o
                for o, d in zip(item.outs, out_dtypes, strict=True)
                if _float(d) and not _low_float(d)
            )
    return outs


def promotions(closed_jaxpr: core.ClosedJaxpr, limit: int = 50) -> list[Promotion]:
    """The implicit, lasting widenings of ``closed_jaxpr`` (module docstring), one per user line
    and pair of dtypes, in eqn order (a ``cond``'s branches and a loop's body at the eqn's
    place); at most ``limit``. A widening whose wider operand came from one already found is
    its consequence (``params - lr * grads`` widens ``params`` because ``lr * grads`` was
    widened) and is not listed again."""
    jaxpr = closed_jaxpr.jaxpr
    env: dict[Any, object | None] = {v: v for v in jaxpr.invars}
    flat = flatten_calls(jaxpr, env)
    args = set(jaxpr.invars)
    outs = {env.get(v) for v in jaxpr.outvars if not isinstance(v, core.Literal)} - {None}
    scope = _Scope(args=args, outs=outs, tainted=set(args), wide=set(), spread=set())
    found: dict[tuple[int | None, str, str], Promotion] = {}
    _scan(flat, scope, found, limit)
    return list(found.values())


@dataclass
class _Scope:
    """What :func:`_scan` knows of one jaxpr's values (keys, :func:`flatten_calls`): ``f``'s
    arguments (``args``), those that reach ``f``'s outputs (``outs``), those derived from the
    arguments (``tainted``), those made wide on purpose (``wide``, :func:`_on_purpose`) and
    those the widenings found so far made wider (``spread``)."""

    args: set[object]
    outs: set[object]
    tainted: set[object]
    wide: set[object]
    spread: set[object]


def _scan(
    flat: list[_Flat],
    scope: _Scope,
    found: dict[tuple[int | None, str, str], Promotion],
    limit: int,
) -> None:
    """The widenings of ``flat`` (:func:`promotions`) added to ``found``; ``scope`` updated."""
    tainted, wide, spread = scope.tainted, scope.wide, scope.spread
    for i, item in enumerate(flat):
        if any(k is not None and k in tainted for k in item.ins):
            tainted.update(item.outs)
        else:
            continue
        if item.eqn.primitive.name in _CONTROL_FLOW:
            _scan_bodies(flat, i, scope, found, limit)
            continue
        wide |= _on_purpose(flat, i, tainted, wide)
        widened = _widened_operand(item, tainted)
        if widened is None:
            continue
        operand, out = widened
        old, new = operand.aval.dtype, out.aval.dtype
        chain, traceback = _user_chain(item)
        if traceback is None or not _widens(old, new) or not _implicit(chain):
            continue
        reached = _spread(flat, i, out, new)
        if not reached & scope.outs:
            continue
        met = _partner(flat, i, operand, out, new)
        if met is None and item.eqn.primitive.name == "convert_element_type":
            continue  # no operand of the wider dtype: asked for by a dtype= argument
        if met is not None and met[1] is not None and met[1] in spread:
            continue  # a consequence of a widening already found
        deliberate = met is not None and met[1] is not None and met[1] in wide
        if deliberate:
            wide |= reached  # the narrow side joined the value made wide on purpose
        spread |= reached
        source = snippet_source(traceback)
        key = (source.line if source else None, str(old), str(new))
        if key in found:
            p = found[key]
            # a finding if any of the line's widenings is one
            found[key] = Promotion(
                **{**p.__dict__, "count": p.count + 1, "deliberate": p.deliberate and deliberate}
            )
            continue
        if len(found) >= limit:
            return
        found[key] = Promotion(
            source=source,
            api=_api(chain, source),
            from_dtype=str(np.dtype(old).name),
            to_dtype=str(np.dtype(new).name),
            from_type=_short(operand.aval),
            to_type=_short(out.aval),
            partner=f"{_short(met[0].aval)} {_origin(met[1], scope.args)}" if met else None,
            deliberate=deliberate,
        )


# The control flow whose bodies are read for widenings (:func:`_bodies`).
_CONTROL_FLOW = frozenset({"cond", "scan", "while"})


def _bodies(eqn: core.JaxprEqn) -> list[tuple[core.ClosedJaxpr, list[int], dict[int, int]]]:
    """The bodies of a ``cond``/``scan``/``while`` eqn that compute its outputs (the ``i``-th
    body output is the eqn's ``i``-th output), each with the eqn operand each body input reads
    and its carries (body input -> the body output it gets at the next step). A ``while``'s
    ``cond_jaxpr`` computes no output and is not among them."""
    p = eqn.params
    n = len(eqn.invars)
    if eqn.primitive.name == "cond":
        return [(b, list(range(1, n)), {}) for b in p["branches"]]
    if eqn.primitive.name == "scan":
        consts, carry = p["num_consts"], p["num_carry"]
        return [(p["jaxpr"], list(range(n)), {consts + c: c for c in range(carry)})]
    if eqn.primitive.name == "while":
        skip, consts = p["cond_nconsts"], p["body_nconsts"]
        carries = {consts + c: c for c in range(n - skip - consts)}
        return [(p["body_jaxpr"], list(range(skip, n)), carries)]
    return []


def _scan_bodies(
    flat: list[_Flat],
    i: int,
    scope: _Scope,
    found: dict[tuple[int | None, str, str], Promotion],
    limit: int,
) -> None:
    """The widenings in the bodies of the control-flow eqn ``flat[i]`` (:func:`_bodies`), read
    as the top level is, each attributed to the user's line in the body; then its outputs that
    a body's widening reached count as widened (what they meet after is a consequence), and
    those a body made wide on purpose as made wide on purpose.

    A body's input is what the eqn operand it reads is (an argument, derived from one, made
    wide on purpose, widened). A loop's carry is also derived from the arguments where the
    body's output for it is, and made wide on purpose where its initial value is a wider float
    not derived from the arguments and the loop reads low-precision floats
    (``jnp.zeros((), jnp.float32)`` over bfloat16 data: the float32 carry precision advice asks
    for). A float32 constant or argument the body promotes low-precision data with is no
    choice of the carry's: that promotion is the body's finding."""
    item = flat[i]
    eqn = item.eqn
    live = [
        bool(_spread(flat, i, o, getattr(o.aval, "dtype", None)) & scope.outs) for o in eqn.outvars
    ]
    made_wide: set[int] = set()
    # the loop reads low-precision floats derived from the arguments (a float64 carry over
    # float32 data is the default dtype under x64, no choice: ``jnp.zeros(n)``)
    low = any(
        _low_float(getattr(a.aval, "dtype", None)) and k in scope.tainted
        for a, k in zip(eqn.invars, item.ins, strict=True)
    )
    for closed, reads, carries in _bodies(eqn):
        body = closed.jaxpr
        keys = [item.ins[j] for j in reads]
        # a constant operand stays a constant; a carry becomes what its steps make it
        env: dict[Any, object | None] = {
            v: (None if k is None and n not in carries else v)
            for n, (v, k) in enumerate(zip(body.invars, keys, strict=True))
        }
        sub = flatten_calls(
            body, env, (*item.calls, str(eqn.primitive.name)), (*item.enclosing, eqn)
        )
        outs = [None if isinstance(o, core.Literal) else env.get(o) for o in body.outvars]
        tainted = {v for v, k in zip(body.invars, keys, strict=True) if k in scope.tainted}
        while True:  # a carry fed a value derived from the arguments is derived from them
            reach = _derived(sub, tainted)
            more = {body.invars[n] for n, o in carries.items() if outs[o] in reach} - tainted
            if not more:
                break
            tainted |= more
        wide = {v for v, k in zip(body.invars, keys, strict=True) if k in scope.wide}
        for n in carries:
            d = getattr(body.invars[n].aval, "dtype", None)
            if low and keys[n] not in scope.tainted and _float(d) and not _low_float(d):
                wide.add(body.invars[n])  # a wider float initial carry over low-precision data
        inner = _Scope(
            args={v for v, k in zip(body.invars, keys, strict=True) if k in scope.args},
            outs={o for o, alive in zip(outs, live, strict=True) if alive and o is not None},
            tainted=tainted,
            wide=wide,
            spread={v for v, k in zip(body.invars, keys, strict=True) if k in scope.spread},
        )
        _scan(sub, inner, found, limit)
        for j, o in enumerate(outs):
            if o is not None and o in inner.spread:
                scope.spread.add(eqn.outvars[j])
            elif o is not None and o in inner.wide:
                made_wide.add(j)
    scope.wide.update(eqn.outvars[j] for j in made_wide)


def _derived(flat: list[_Flat], tainted: set[object]) -> set[object]:
    """``tainted`` and the values of ``flat`` computed from them."""
    reach = set(tainted)
    for item in flat:
        if any(k is not None and k in reach for k in item.ins):
            reach.update(item.outs)
    return reach


def flatten_calls(
    jaxpr: core.Jaxpr,
    env: dict[Any, object | None],
    calls: tuple[str, ...] = (),
    enclosing: tuple[core.JaxprEqn, ...] = (),
) -> list[_Flat]:
    """``jaxpr``'s eqns with calls inlined, each with a key per operand and output (``env``
    maps ``jaxpr``'s invars to their keys, and gets every var's key; ``None``: a constant). A
    call's outputs get the keys of its body's outputs. ``calls``/``enclosing``: those of the
    eqn whose body ``jaxpr`` is (:class:`_Flat`)."""
    flat: list[_Flat] = []
    _flatten(jaxpr, env, flat, calls, enclosing)
    return flat


def eqn_count(closed_jaxpr: core.ClosedJaxpr) -> int:
    """How many eqns :func:`promotions` reads (calls inlined)."""
    return len(flatten_calls(closed_jaxpr.jaxpr, {v: v for v in closed_jaxpr.jaxpr.invars}))
