"""Typed views of JAX's jaxpr objects: ClosedJaxpr -> :class:`jaxscope.protocol.JaxprView`.

Every string here is JAX's own printout:

* ``JaxprView.text`` is ``str(closed_jaxpr)`` (``core.Jaxpr.__str__`` ->
  ``core.pp_toplevel_jaxpr``).
* Variable names are those of that printout: ``pp_toplevel_jaxpr`` builds one
  ``core.JaxprPpContext`` (seeded with ``_dropvars`` so unused outvars print as ``_``, and holding
  the names of shared inner jaxprs); we capture that very context object while JAX prints, then
  ask ``core.pp_var(v, context)`` for each var, so names agree with the text by construction.
* An eqn's ``text`` is ``core.pp_eqn(eqn, context, JaxprPpSettings())`` (JAX's custom rules
  included, e.g. ``jit`` hides default params); each param value is ``core.pp_kv_pair``'s
  printout (``k=`` stripped), inner jaxprs ``core.pp_jaxpr`` with the same context.
* Avals: ``aval.shape``, ``aval.dtype.name``, ``aval.weak_type``,
  ``aval.str_short(short_dtypes=True)`` (``f32[3]``, as the jaxpr text writes types).
* ``source`` comes from ``eqn.source_info.traceback`` (an ``xla_client.Traceback``): the innermost
  frame whose file name is :data:`SNIPPET_FILENAME` (``traceback.raw_frames()`` +
  ``source_info_util.raw_frame_to_frame``). ``source_info_util.user_frame`` alone is not enough:
  it also treats jaxscope's own files as user code.

Cost (docs/design/0013-ad-capture-speed.md): a view is built once per eqn of jaxprs of thousands
of eqns, so what JAX already computed is reused, never recomputed differently. While JAX prints
the whole jaxpr we keep the doc ``core.pp_eqn`` built for each eqn (keyed by the eqn object, for
the captured context and default settings) and format that doc for ``EqnView.text``: the same
call with the same context, whose names are fixed once assigned, so the same bytes. Per context
we also keep each var's view and each inner jaxpr's text; param texts of plain values (ints,
strings, dtypes, tuples of them: ``pp_kv_pair`` prints ``str(value)``, no context) are cached by
type and value; ``snippet_source`` is cached per traceback (equal tracebacks have equal frames,
and the eqns of one user line share them). ``backend/tests/test_views_identity.py`` holds every
field equal to the straightforward per-eqn printing on the shipped examples.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import jax
import ml_dtypes
import numpy as np
from jax._src import core, source_info_util
from pydantic import BaseModel

from jaxscope.internals.patching import patched
from jaxscope.protocol import (
    AvalView,
    CallerFrame,
    ConstVarView,
    EqnView,
    InnerJaxprView,
    JaxprView,
    SourceLoc,
    VarView,
)
from jaxscope.snippet_model import SNIPPET_FILENAME

source_info_util.register_exclusion(__file__)

# Longest value preview (characters) for constvars and output arrays.
PREVIEW_CHARS = 2000
_capture_lock = threading.RLock()


def preview_value(value: Any, max_chars: int = PREVIEW_CHARS) -> str:
    """A numpy printout of ``value`` (summarised past 50 elements; cut at ``max_chars``).

    Arrays and scalars go through the same numpy element formatter (``precision=6``,
    ``floatmode='maxprec'``: the shortest digits that round back to the value *in its dtype*, at
    most 6 after the point; scientific below 1e-4 and from 1e6 for float32, 1e8 for float64),
    so a float32 scalar never shows float64 digits, nor more digits than the same value inside
    an array. A scalar's bare trailing point is completed (``1.`` -> ``1.0``, ``1.e-05`` ->
    ``1e-05``). The frontend's ``formatScalar`` (frontend/src/widgets/format.ts) writes JSON
    numbers by the same rule, checked against this function on shared cases
    (docs/design/0004-frontend-shell.md).
    """
    try:
        arr = np.asarray(value)
    except Exception:  # e.g. a PRNG key array: show JAX's own repr instead
        text = repr(value)
    else:
        if arr.dtype == jax.dtypes.float0:
            # No data to print (numpy would write ``(b'',)``): its aval, as JAX writes it.
            return f"float0[{','.join(map(str, arr.shape))}]"
        # numpy prints ml_dtypes floats (bfloat16, float8) through float32: 0.100098 for a
        # bfloat16 0.1. Their elements get the same rule with their own digits instead.
        small = _ml_float_precision(arr.dtype)
        with np.printoptions(threshold=50, edgeitems=3, linewidth=100, precision=6):
            if small is None:
                text = np.array2string(arr, separator=", ")
            else:
                text = np.array2string(
                    arr,
                    separator=", ",
                    formatter={"all": functools.partial(_ml_float_text, arr.dtype)},
                )
        if arr.ndim == 0:
            text = _complete_point(text)
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


def _ml_float_precision(dtype: np.dtype[Any]) -> int | None:
    """``finfo(dtype).precision`` of an ml_dtypes float (bfloat16, float8_*); ``None`` for the
    dtypes numpy prints itself (its own floats, ints, bools, complex)."""
    if dtype.kind != "V":
        return None
    try:
        return int(ml_dtypes.finfo(dtype).precision)
    except (TypeError, ValueError):
        return None


def _ml_float_text(dtype: np.dtype[Any], x: Any) -> str:
    """One ml_dtypes float as numpy writes a float of its own dtypes (``precision=6``, maxprec):
    the shortest digits (ties to even) that round back to ``x`` in ``dtype``, at most 6 after
    the point; scientific below 1e-4 and from ``10 ** min(8, finfo(dtype).precision)``."""
    v = float(x)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "-0." if np.signbit(v) else "0."
    for p in range(1, 18):  # Python's "e" formatting rounds the exact value, ties to even
        short = f"{v:.{p - 1}e}"
        if float(np.asarray(float(short)).astype(dtype)) == v:
            break
    mantissa, exp = short.split("e")
    cutoff = float(np.asarray(10.0 ** min(8, _ml_float_precision(dtype) or 8)).astype(dtype))
    if abs(v) >= cutoff or abs(v) < float(np.asarray(1e-4).astype(dtype)):
        if len(mantissa.partition(".")[2]) > 6:
            mantissa, exp = f"{v:.6e}".split("e")
            mantissa = mantissa.rstrip("0")
        mantissa = mantissa if "." in mantissa else mantissa + "."
        return f"{mantissa}e{exp[0]}{exp[1:].lstrip('0').rjust(2, '0')}"
    digits = len(mantissa.replace("-", "").replace(".", "")) - 1 - int(exp)
    text = f"{float(short):.{max(0, digits)}f}"
    if digits > 6:
        text = f"{v:.6f}".rstrip("0")
    return text if "." in text else text + "."


def _complete_point(text: str) -> str:
    """numpy's ``1.`` / ``-0.`` / ``1.e-05`` as a lone number is written ``1.0`` / ``-0.0`` /
    ``1e-05`` (complex and other texts unchanged)."""
    if text.endswith("."):
        return text + "0"
    return text.replace(".e", "e") if re.fullmatch(r"-?\d+\.e[-+]\d+", text) else text


def _short(aval: Any) -> str:
    try:
        return str(aval.str_short(short_dtypes=True))
    except TypeError:  # avals whose str_short takes no short_dtypes
        return str(aval.str_short())


def aval_view(aval: Any) -> AvalView:
    """An ``AvalView`` of a ``core.ShapedArray`` (or any aval with ``str_short``).

    Views of hashable avals are cached (a trace meets the same few avals again and again);
    callers must not mutate the returned model.
    """
    try:
        return _cached_aval_view(aval)
    except TypeError:  # an unhashable aval
        return _aval_view(aval)


@functools.lru_cache(maxsize=4096)
def _cached_aval_view(aval: Any) -> AvalView:
    return _aval_view(aval)


def _aval_view(aval: Any) -> AvalView:
    shape = [int(d) if isinstance(d, int) else -1 for d in getattr(aval, "shape", ())]
    dtype = getattr(aval, "dtype", None)
    return AvalView(
        shape=shape,
        dtype=getattr(dtype, "name", str(dtype)) if dtype is not None else str(aval),
        weak_type=bool(getattr(aval, "weak_type", False)),
        short=_short(aval),
    )


def snippet_source(traceback: Any) -> SourceLoc | None:
    """The innermost frame of ``traceback`` (an ``xla_client.Traceback``) in the user's snippet,
    as a ``SourceLoc`` (1-based lines, 0-based columns); ``None`` when no snippet frame is on it.

    Cached per traceback (``Traceback`` hashes and compares by its frames, code object and
    instruction; the eqns of one user line share equal ones); callers must not mutate the result.
    """
    if traceback is None:
        return None
    try:
        return _cached_snippet_source(traceback)
    except TypeError:  # an unhashable traceback
        return _snippet_source(traceback)


@functools.lru_cache(maxsize=4096)
def _cached_snippet_source(traceback: Any) -> SourceLoc | None:
    return _snippet_source(traceback)


def _snippet_source(traceback: Any) -> SourceLoc | None:
    codes, lastis = traceback.raw_frames()
    frames = [
        source_info_util.raw_frame_to_frame(code, lasti)
        for code, lasti in zip(codes, lastis, strict=True)
        if code.co_filename == SNIPPET_FILENAME
    ]
    if not frames:
        return None
    fr = frames[0]
    callers = [CallerFrame(line=c.start_line, function=c.function_name) for c in frames[1:]]
    return SourceLoc(
        line=fr.start_line,
        column=fr.start_column,
        end_line=fr.end_line,
        end_column=fr.end_column,
        function=fr.function_name,
        callers=callers or None,
    )


_DEFAULT_SETTINGS = core.JaxprPpSettings()


class _ContextMemo:
    """What one ``JaxprPpContext`` has printed: ``eqn_docs[id(eqn)] = (eqn, core.pp_eqn(eqn,
    ctx, JaxprPpSettings()))`` recorded while JAX printed the whole jaxpr (the eqn is held so its
    id stays its own; the doc is replaced by its text once formatted), ``var_views[id(v)] = (v,
    VarView)``, ``inner_texts[id(jaxpr)] = (jaxpr, text)`` and ``inner_eqns[id(jaxpr)] = (jaxpr,
    [EqnView])``, and ``jaxpr_docs[id(jaxpr)] = (jaxpr, core.pp_jaxpr(jaxpr, ctx,
    JaxprPpSettings()))`` of each inner jaxpr JAX printed in full while printing the whole
    jaxpr. A name, once the context gives one, never changes: each entry is what a fresh call
    would return."""

    __slots__ = ("eqn_docs", "inner_eqns", "inner_texts", "jaxpr_docs", "var_views")

    def __init__(self) -> None:
        self.eqn_docs: dict[int, tuple[core.JaxprEqn, Any]] = {}
        self.jaxpr_docs: dict[int, tuple[core.Jaxpr, Any]] = {}
        self.var_views: dict[int, tuple[Any, VarView]] = {}
        self.inner_texts: dict[int, tuple[core.Jaxpr, str]] = {}
        self.inner_eqns: dict[int, tuple[core.Jaxpr, list[EqnView]]] = {}


_MEMO_ATTR = "_jaxscope_memo"


def _memo(ctx: core.JaxprPpContext) -> _ContextMemo:
    """``ctx``'s memo, kept on the context object itself (it lives exactly as long; a
    ``WeakKeyDictionary`` look-up cost more than the printing it saves)."""
    memo: _ContextMemo | None = ctx.__dict__.get(_MEMO_ATTR)  # only _memo writes it
    if memo is None:
        memo = ctx.__dict__.setdefault(_MEMO_ATTR, _ContextMemo())
    return memo


@contextlib.contextmanager
def _capturing_pp_context() -> Iterator[list[core.JaxprPpContext]]:
    """Record every ``core.JaxprPpContext`` created inside (``pp_toplevel_jaxpr`` makes one),
    and the doc ``core.pp_eqn`` builds for each eqn printed with one of them (default settings)
    in that context's :class:`_ContextMemo`. Meanwhile ``core.pp_aval`` (a binder's type,
    ``aval.str_short(short_dtypes=True)``: the context is not read) is asked once per aval
    object: JAX interns avals, and a jaxpr's binders share a few dozen of them."""
    created: list[core.JaxprPpContext] = []
    me = threading.get_ident()
    shorts: dict[int, tuple[Any, str]] = {}

    with _capture_lock:
        # Read under the lock: the wrappers call (and `patched` restores) what is in place now,
        # never another thread's wrappers.
        original_pp_eqn = core.pp_eqn
        original_pp_aval = core.pp_aval
        original_pp_jaxpr = core.pp_jaxpr

        def _pp_aval_once(aval: Any, context: core.JaxprPpContext) -> str:
            hit = shorts.get(id(aval))
            if hit is None or hit[0] is not aval:  # the aval is held: its id stays its own
                hit = shorts[id(aval)] = (aval, original_pp_aval(aval, context))
            return hit[1]

        class _Recorded(core.JaxprPpContext):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                if threading.get_ident() == me:  # not a context another thread prints with
                    created.append(self)

        def _ours(context: core.JaxprPpContext, settings: core.JaxprPpSettings) -> bool:
            # This thread, default settings, a context made inside the block.
            return (
                threading.get_ident() == me
                and settings == _DEFAULT_SETTINGS
                and any(context is c for c in created)
            )

        def _recording_pp_eqn(
            eqn: core.JaxprEqn, context: core.JaxprPpContext, settings: core.JaxprPpSettings
        ) -> Any:
            doc = original_pp_eqn(eqn, context, settings)
            if _ours(context, settings):
                _memo(context).eqn_docs.setdefault(id(eqn), (eqn, doc))
            return doc

        def _recording_pp_jaxpr(
            jaxpr: core.Jaxpr, context: core.JaxprPpContext, settings: core.JaxprPpSettings
        ) -> Any:
            doc = original_pp_jaxpr(jaxpr, context, settings)
            # A shared jaxpr is printed by its name here, not in full.
            if jaxpr not in context.shared_jaxprs and _ours(context, settings):
                _memo(context).jaxpr_docs.setdefault(id(jaxpr), (jaxpr, doc))
            return doc

        with patched(
            core,
            JaxprPpContext=_Recorded,
            pp_eqn=_recording_pp_eqn,
            pp_aval=_pp_aval_once,
            pp_jaxpr=_recording_pp_jaxpr,
        ):
            yield created


# What print_with_context printed, per jaxpr object while it lives: a capture asks again for a
# jaxpr a view of it printed (the jvp exhibit names the primal jaxpr's vars after its
# JaxprStaged view; the transpose walk names the linear jaxpr's vars, and prints its eqns, after
# linear_jaxpr_staged's view). A jaxpr is not changed once built, and a context never renames a
# var it has named, so the text and the names are what printing it again would give.
_PRINTED: weakref.WeakKeyDictionary[core.Jaxpr, tuple[str, core.JaxprPpContext]] = (
    weakref.WeakKeyDictionary()
)


def print_with_context(jaxpr: core.Jaxpr) -> tuple[str, core.JaxprPpContext]:
    """``str(jaxpr)`` and the ``JaxprPpContext`` JAX used to print it (its var names); printed
    once per jaxpr object (a second call returns the same text and context)."""
    with _capture_lock:
        hit = _PRINTED.get(jaxpr)
    if hit is not None:
        return hit
    with _capturing_pp_context() as created:
        text = str(jaxpr)
    if not created:
        raise RuntimeError("core.pp_toplevel_jaxpr did not create a JaxprPpContext")
    with _capture_lock:
        _PRINTED[jaxpr] = (text, created[0])
    return text, created[0]


# Printing rules (``core.pp_eqn_rules``) that print an eqn from its params and vars alone: each
# of these ``lax`` rules drops or reshapes some params and calls ``core._pp_eqn(eqn.replace(
# params=...))`` (their sources are pinned in test_printed_alike.py).
_DEFAULT_LIKE_PP_RULES = frozenset(
    {
        "_unary_with_accuracy_pp_rule",
        "_binary_with_out_dtype_pp_rule",
        "_convert_elt_type_pp_rule",
        "_dot_general_pp_rule",
        "_broadcast_in_dim_pp_rule",
    }
)


def printed_alike(a: core.Jaxpr, b: core.Jaxpr) -> dict[Any, Any] | None:
    """A map from ``a``'s vars to ``b``'s under which ``str(a) == str(b)`` holds by
    construction (each var of ``a`` printed with the name its image gets in ``b``'s printout),
    or None when this cannot tell (then print both and compare: ``None`` is not "different").

    ``core.pp_toplevel_jaxpr`` (default settings) prints a jaxpr from: each var's name, which its
    context gives in the order vars are met (``_dropvars`` first names an eqn's unread outputs
    ``_``); each binder's aval (``str_short(short_dtypes=True)``); each literal's
    ``pretty_print`` (no context); each eqn's primitive, its params (``pp_kv_pair``: ``str`` of
    a value; jaxprs with the context) and its primitive's printing rule. So ``a`` and ``b`` print
    alike when their vars correspond one to one, position by position (every use of ``x`` in
    ``a`` is a use of ``m[x]`` in ``b``; the same reads, hence the same unread outputs), binders
    print the same aval, literals the same text, and eqns have the same primitive and params that
    print alike (the same object, or equal plain values: :func:`_plain_key`). Decided only for
    eqns whose params hold no jaxpr (an inner jaxpr used twice is printed first, by name) and
    whose primitive JAX prints with its default rule or one of :data:`_DEFAULT_LIKE_PP_RULES`.
    Costs a fraction of printing (``jvp_steps`` asks it instead of printing a second jaxpr of
    thousands of eqns); ``test_views_identity`` holds it to the texts."""
    if (
        len(a.constvars) != len(b.constvars)
        or len(a.invars) != len(b.invars)
        or len(a.outvars) != len(b.outvars)
        or len(a.eqns) != len(b.eqns)
    ):
        return None
    m: dict[Any, Any] = {}
    bound: set[Any] = set()
    shorts: dict[int, tuple[Any, str]] = {}

    def short(aval: Any) -> str:
        hit = shorts.get(id(aval))
        if hit is None or hit[0] is not aval:
            hit = shorts[id(aval)] = (aval, _short(aval))
        return hit[1]

    def bind(x: Any, y: Any) -> bool:
        if type(x) is not type(y) or not isinstance(x, core.Var):
            return False
        if x.aval is not y.aval and short(x.aval) != short(y.aval):
            return False
        if isinstance(x, core.DropVar):
            return True  # printed ``_``, named by no context
        if x in m or y in bound:
            return False
        m[x] = y
        bound.add(y)
        return True

    def use(x: Any, y: Any) -> bool:
        if isinstance(x, core.Literal):
            return isinstance(y, core.Literal) and x.pretty_print(
                _LITERAL_CONTEXT
            ) == y.pretty_print(_LITERAL_CONTEXT)
        return m.get(x) is y and y is not None

    for xs, ys in ((a.constvars, b.constvars), (a.invars, b.invars)):
        if not all(map(bind, xs, ys)):
            return None
    printed: dict[core.Primitive, bool] = {}  # _default_printed, per primitive
    for x, y in zip(a.eqns, b.eqns, strict=True):
        if x.primitive is not y.primitive:
            return None
        default = printed.get(x.primitive)
        if default is None:
            default = printed[x.primitive] = _default_printed(x.primitive)
        if not default:
            return None
        if len(x.invars) != len(y.invars) or len(x.outvars) != len(y.outvars):
            return None
        if not _params_alike(x.params, y.params):
            return None
        if not all(map(use, x.invars, y.invars)) or not all(map(bind, x.outvars, y.outvars)):
            return None
    if not all(map(use, a.outvars, b.outvars)):
        return None
    return m


# ``Literal.pretty_print`` takes a context and does not read it.
_LITERAL_CONTEXT = core.JaxprPpContext()


def _default_printed(primitive: core.Primitive) -> bool:
    rule = core.pp_eqn_rules.get(primitive)
    return rule is None or (
        getattr(rule, "__module__", None) == "jax._src.lax.lax"
        and getattr(rule, "__name__", None) in _DEFAULT_LIKE_PP_RULES
    )


def _params_alike(x: dict[str, Any], y: dict[str, Any]) -> bool:
    if x.keys() != y.keys():
        return False
    for key, vx in x.items():
        vy = y[key]
        if vx is vy:  # the same object prints the same (a jaxpr aside: printed with names)
            if _plain_key(vx) is None and _holds_jaxpr(vx):
                return False
            continue
        kx = _plain_key(vx)
        if kx is None or kx != _plain_key(vy):
            return False
    return True


def _holds_jaxpr(value: Any) -> bool:
    values = value if isinstance(value, (tuple, list)) else (value,)
    return any(isinstance(v, (core.Jaxpr, core.ClosedJaxpr, tuple, list)) for v in values)


def _var_view(v: Any, ctx: core.JaxprPpContext, memo: _ContextMemo | None = None) -> VarView:
    views = (memo or _memo(ctx)).var_views
    hit = views.get(id(v))
    if hit is not None and hit[0] is v:
        return hit[1]
    view = _new_var_view(v, ctx)
    views[id(v)] = (v, view)
    return view


def var_name(v: Any, ctx: core.JaxprPpContext) -> str:
    """``str(core.pp_var(v, ctx))``: from ``v``'s view when one was built with ``ctx`` (a
    jaxpr's view names every var it prints), else printed now."""
    hit = _memo(ctx).var_views.get(id(v))
    if hit is not None and hit[0] is v:
        return hit[1].name
    return _var_text(v, ctx)


def _var_text(v: Any, ctx: core.JaxprPpContext) -> str:
    """``str(core.pp_var(v, ctx))``: for a plain var its doc is one text, the context's name
    (``Var.pretty_print``), read without building and formatting the doc."""
    if type(v) is core.Var:
        return str(v.pretty_print(ctx))
    return str(core.pp_var(v, ctx))


_ModelT = TypeVar("_ModelT", bound=BaseModel)
# Per model class: its field names in declaration order, or None when ``constructed`` must leave
# it to pydantic (a class with aliases, private attributes, a post-init hook, extra fields).
_TRUSTED_FIELDS: dict[type[BaseModel], tuple[str, ...] | None] = {}


def _trusted_fields(cls: type[BaseModel]) -> tuple[str, ...] | None:
    fields = cls.__pydantic_fields__
    plain = (
        cls.__pydantic_post_init__ is None
        and not cls.__private_attributes__
        and not cls.__pydantic_root_model__
        and cls.model_config.get("extra") != "allow"
        and all(f.alias is None and f.validation_alias is None for f in fields.values())
    )
    names = tuple(fields) if plain else None
    _TRUSTED_FIELDS[cls] = names
    return names


def constructed(cls: type[_ModelT], **values: Any) -> _ModelT:
    """``cls.model_construct(**values)`` (no validation: each value has its declared type by
    construction) when ``values`` names every field of a plain model class: the same instance
    state (``__dict__`` in declaration order, ``model_fields_set`` the names given, no extra, no
    private), set directly. pydantic's ``model_construct`` looks up aliases and defaults field by
    field: 4.7 against 0.9 µs a ``VarView``, and a jaxpr view builds one per var and eqn (12,000
    for partial_eval's three views of bench/ad_overhead.py, design 0082). Any other class, or a
    field left to its default, goes through ``model_construct``; ``test_views_identity`` holds
    the two alike."""
    names = _TRUSTED_FIELDS[cls] if cls in _TRUSTED_FIELDS else _trusted_fields(cls)
    if names is None or len(values) != len(names):
        return cls.model_construct(**values)
    model = cls.__new__(cls)
    _set_attr(model, "__dict__", {name: values[name] for name in names})
    _set_attr(model, "__pydantic_fields_set__", set(names))
    _set_attr(model, "__pydantic_extra__", None)
    _set_attr(model, "__pydantic_private__", None)
    return model


_set_attr = object.__setattr__


def _new_var_view(v: Any, ctx: core.JaxprPpContext) -> VarView:
    # ``constructed``: every field is built with its declared type here (str, AvalView, bool),
    # so pydantic's validation (a third of a view's cost) would only copy them.
    return constructed(
        VarView,
        name=_var_text(v, ctx),
        aval=aval_view(v.aval),
        literal=isinstance(v, core.Literal),
    )


def _param_text(key: str, value: Any, ctx: core.JaxprPpContext) -> str:
    frozen = _plain_key(value)
    if frozen is None:
        return _new_param_text(key, value, ctx)
    return _cached_param_text(key, frozen, value)


def _new_param_text(key: str, value: Any, ctx: core.JaxprPpContext) -> str:
    memo: _ContextMemo | None = ctx.__dict__.get(_MEMO_ATTR)
    if memo is not None and memo.jaxpr_docs and _holds_jaxpr(value):
        with _reusing_jaxpr_docs(ctx, memo):
            doc = core.pp_kv_pair(key, value, ctx, _DEFAULT_SETTINGS)
    else:
        doc = core.pp_kv_pair(key, value, ctx, core.JaxprPpSettings())
    return doc.format()[len(key) + 1 :]


def _printed_doc(jaxpr: core.Jaxpr, memo: _ContextMemo) -> Any:
    hit = memo.jaxpr_docs.get(id(jaxpr))
    return hit[1] if hit is not None and hit[0] is jaxpr else None


@contextlib.contextmanager
def _reusing_jaxpr_docs(ctx: core.JaxprPpContext, memo: _ContextMemo) -> Iterator[None]:
    """Within the block, ``core.pp_jaxpr`` with ``ctx`` (default settings) gives the doc it gave
    for the same jaxpr while JAX printed the whole jaxpr (:func:`_capturing_pp_context`) instead
    of building it again: an inner jaxpr's param text (``jaxpr={ lambda ... }``) would otherwise
    be the third printing of its eqns (design 0080). Same context, same names: the same doc."""
    with _capture_lock:
        original_pp_jaxpr = core.pp_jaxpr

        def _reused(
            jaxpr: core.Jaxpr, context: core.JaxprPpContext, settings: core.JaxprPpSettings
        ) -> Any:
            if context is ctx and settings == _DEFAULT_SETTINGS:
                doc = _printed_doc(jaxpr, memo)
                if doc is not None:
                    return doc
            return original_pp_jaxpr(jaxpr, context, settings)

        with patched(core, pp_jaxpr=_reused):
            yield


_PLAIN_TYPES = (int, str, type(None))  # exact types: bool is tagged apart from int


def _plain_key(value: Any) -> Any:
    """A hashable key that determines ``str(value)``, for values ``pp_kv_pair`` prints without
    the context (ints, bools, strings, None, numpy dtypes, tuples of these): the type is part of
    the key (``1 == True == 1.0`` print differently); ``None`` for anything else (floats, -0.0
    equals 0.0; jaxprs, printed with the context; objects whose ``str`` may change)."""
    t = type(value)
    if t is tuple:
        items = tuple(_plain_key(v) for v in value)
        return None if any(i is None for i in items) else (tuple, items)
    if t in _PLAIN_TYPES or t is bool or isinstance(value, np.dtype):
        return (t, value)
    return None


_param_texts: dict[tuple[str, Any], str] = {}
_PARAM_TEXTS_MAX = 8192


def _cached_param_text(key: str, frozen: Any, value: Any) -> str:
    text = _param_texts.get((key, frozen))
    if text is None:
        text = _new_param_text(key, value, core.JaxprPpContext())
        if len(_param_texts) >= _PARAM_TEXTS_MAX:
            _param_texts.clear()
        _param_texts[(key, frozen)] = text
    return text


def _inner_text(jaxpr: core.Jaxpr, ctx: core.JaxprPpContext, settings: core.JaxprPpSettings) -> str:
    """JAX's printout of an inner jaxpr. A jaxpr used more than once is printed once at the top
    of the text (``let _uniform = { lambda ... } in``) and by name where used; here we print its
    body in full (``core.pp_jaxpr_skeleton``, as ``core.pp_jaxpr`` does for unshared ones)."""
    if jaxpr in ctx.shared_jaxprs:
        doc = core.pp_jaxpr_skeleton(
            jaxpr, lambda: core.pp_eqns(jaxpr.eqns, ctx, settings), ctx, settings
        )
        return str(doc.format())
    memo: _ContextMemo | None = ctx.__dict__.get(_MEMO_ATTR)
    printed = None if memo is None or settings != _DEFAULT_SETTINGS else _printed_doc(jaxpr, memo)
    if printed is not None:
        return str(printed.format())
    return str(core.pp_jaxpr(jaxpr, ctx, settings).format())


def _memo_inner_text(jaxpr: core.Jaxpr, ctx: core.JaxprPpContext, memo: _ContextMemo) -> str:
    texts = memo.inner_texts
    hit = texts.get(id(jaxpr))
    if hit is not None and hit[0] is jaxpr:
        return hit[1]
    text = _inner_text(jaxpr, ctx, core.JaxprPpSettings())
    texts[id(jaxpr)] = (jaxpr, text)
    return text


def _memo_inner_eqns(
    jaxpr: core.Jaxpr, ctx: core.JaxprPpContext, memo: _ContextMemo
) -> list[EqnView]:
    """The eqn views of an inner jaxpr, built once per jaxpr object (a jaxpr JAX shares between
    calls, e.g. one ``jit`` function called in every layer, is one object)."""
    views = memo.inner_eqns
    hit = views.get(id(jaxpr))
    if hit is not None and hit[0] is jaxpr:
        return hit[1]
    eqns = [eqn_view(i, e, ctx) for i, e in enumerate(jaxpr.eqns)]
    views[id(jaxpr)] = (jaxpr, eqns)
    return eqns


def _inner_jaxprs(
    eqn: core.JaxprEqn, ctx: core.JaxprPpContext, memo: _ContextMemo | None = None
) -> list[InnerJaxprView]:
    name = eqn.params.get("name")
    out: list[InnerJaxprView] = []
    for key in sorted(eqn.params):
        value = eqn.params[key]
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            if isinstance(v, (core.Jaxpr, core.ClosedJaxpr)):
                inner = v.jaxpr if isinstance(v, core.ClosedJaxpr) else v
                memo = memo or _memo(ctx)
                out.append(
                    constructed(
                        InnerJaxprView,
                        param=key,
                        name=str(name) if name is not None else None,
                        text=_memo_inner_text(inner, ctx, memo),
                        constvars=[_var_view(x, ctx, memo) for x in inner.constvars],
                        invars=[_var_view(x, ctx, memo) for x in inner.invars],
                        outvars=[_var_view(x, ctx, memo) for x in inner.outvars],
                        eqns=_memo_inner_eqns(inner, ctx, memo),
                    )
                )
    return out


def _eqn_text(eqn: core.JaxprEqn, ctx: core.JaxprPpContext, memo: _ContextMemo) -> str:
    """``core.pp_eqn(eqn, ctx, JaxprPpSettings()).format()``, from the doc JAX built for ``eqn``
    while printing the whole jaxpr with ``ctx`` when there is one; formatted once per eqn and
    context (an eqn view and a transpose step of the same eqn share it)."""
    hit = memo.eqn_docs.get(id(eqn))
    if hit is not None and hit[0] is eqn and isinstance(hit[1], str):
        return hit[1]
    doc = hit[1] if hit is not None and hit[0] is eqn else core.pp_eqn(eqn, ctx, _DEFAULT_SETTINGS)
    text = str(doc.format())
    memo.eqn_docs[id(eqn)] = (eqn, text)
    return text


def eqn_text(eqn: core.JaxprEqn, ctx: core.JaxprPpContext) -> str:
    """``core.pp_eqn(eqn, ctx, core.JaxprPpSettings()).format()``, reusing what printing the
    whole jaxpr with ``ctx`` (:func:`print_with_context`) or its view already built."""
    return _eqn_text(eqn, ctx, _memo(ctx))


def eqn_view(index: int, eqn: core.JaxprEqn, ctx: core.JaxprPpContext) -> EqnView:
    """The view of ``eqn`` (the ``index``-th eqn of its jaxpr), names from ``ctx``."""
    memo = _memo(ctx)
    # ``constructed`` (no validation): each field has its declared type by construction.
    return constructed(
        EqnView,
        index=int(index),
        primitive=str(eqn.primitive.name),
        params={k: _param_text(k, eqn.params[k], ctx) for k in sorted(eqn.params)},
        invars=[_var_view(v, ctx, memo) for v in eqn.invars],
        outvars=[_var_view(v, ctx, memo) for v in eqn.outvars],
        effects=effect_names(eqn.effects),
        source=snippet_source(eqn.source_info.traceback),
        text=_eqn_text(eqn, ctx, memo),
        inner_jaxprs=_inner_jaxprs(eqn, ctx, memo),
        name_stack=name_stack_text(eqn.source_info.name_stack),
    )


def name_stack_text(name_stack: source_info_util.NameStack) -> str:
    """``str(name_stack)`` (``layer3/attn``, ``transpose(jvp(layer3))``): what JAX writes
    between ``jit(f)/`` and the primitive in the HLO op names; ``""`` for an empty stack."""
    return str(name_stack) if name_stack.stack else ""


def effect_names(effects: Any) -> list[str]:
    """``str`` of each effect (``core.Effects``), sorted for a stable order."""
    return sorted(str(e) for e in effects)


def jaxpr_view(
    closed_jaxpr: core.ClosedJaxpr, preview: Callable[[Any], str] = preview_value
) -> JaxprView:
    """The :class:`JaxprView` of ``closed_jaxpr``: ``text == str(closed_jaxpr)`` byte for byte.
    ``preview``: prints a constant as :func:`preview_value` does (one that remembers what it
    printed, say)."""
    jaxpr = closed_jaxpr.jaxpr
    text, ctx = print_with_context(jaxpr)
    return JaxprView(
        text=text,
        constvars=[
            ConstVarView(var=_var_view(v, ctx), value_preview=preview(c))
            for v, c in zip(jaxpr.constvars, closed_jaxpr.consts, strict=True)
        ],
        invars=[_var_view(v, ctx) for v in jaxpr.invars],
        outvars=[_var_view(v, ctx) for v in jaxpr.outvars],
        eqns=[eqn_view(i, e, ctx) for i, e in enumerate(jaxpr.eqns)],
        effects=effect_names(closed_jaxpr.effects),
        arg_names=arg_names(jaxpr),
    )


def arg_names(jaxpr: core.Jaxpr) -> list[str] | None:
    """The keypath of each invar's leaf in the traced function's arguments
    (``jaxpr.debug_info.arg_names``: ``params['layers'][3]['w']``), or None when JAX recorded
    none or not one per invar."""
    info = getattr(jaxpr, "debug_info", None)
    names = getattr(info, "arg_names", None)
    if names is None or len(names) != len(jaxpr.invars):
        return None
    return [str(n) for n in names]


def eqn_sources(closed_jaxpr: core.ClosedJaxpr) -> Sequence[SourceLoc | None]:
    """The snippet line of each top-level eqn of ``closed_jaxpr`` (``None`` where none)."""
    return [snippet_source(e.source_info.traceback) for e in closed_jaxpr.jaxpr.eqns]


def snippet_frames(traceback: Any) -> tuple[tuple[int, int], ...]:
    """``(line, column)`` of every snippet frame on ``traceback``, innermost first (the chain
    of user calls that led to an eqn: a helper's line, then the line that called it...)."""
    if traceback is None:
        return ()
    out = []
    codes, lastis = traceback.raw_frames()
    for code, lasti in zip(codes, lastis, strict=True):
        if code.co_filename == SNIPPET_FILENAME:
            fr = source_info_util.raw_frame_to_frame(code, lasti)
            out.append((fr.start_line, fr.start_column))
    return tuple(out)
