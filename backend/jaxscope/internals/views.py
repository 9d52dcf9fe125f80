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
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from jax._src import core, source_info_util

from jaxscope.protocol import (
    AvalView,
    ConstVarView,
    EqnView,
    InnerJaxprView,
    JaxprView,
    SourceLoc,
    VarView,
)
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME

source_info_util.register_exclusion(__file__)

# Longest value preview (characters) for constvars and output arrays.
PREVIEW_CHARS = 2000
_PRINT_OPTIONS = {"threshold": 50, "edgeitems": 3, "linewidth": 100, "precision": 6}
_capture_lock = threading.RLock()


def preview_value(value: Any, max_chars: int = PREVIEW_CHARS) -> str:
    """A numpy printout of ``value`` (summarised past 50 elements; cut at ``max_chars``)."""
    try:
        arr = np.asarray(value)
    except Exception:  # e.g. a PRNG key array: show JAX's own repr instead
        text = repr(value)
    else:
        with np.printoptions(**_PRINT_OPTIONS):  # type: ignore[arg-type]
            text = np.array2string(arr, separator=", ") if arr.ndim else repr(arr.item())
    if len(text) > max_chars:
        text = text[: max_chars - 1] + "…"
    return text


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
    as a ``SourceLoc`` (1-based lines, 0-based columns); ``None`` when no snippet frame is on it."""
    if traceback is None:
        return None
    codes, lastis = traceback.raw_frames()
    for code, lasti in zip(codes, lastis, strict=True):
        if code.co_filename == SNIPPET_FILENAME:
            fr = source_info_util.raw_frame_to_frame(code, lasti)
            return SourceLoc(
                line=fr.start_line,
                column=fr.start_column,
                end_line=fr.end_line,
                end_column=fr.end_column,
                function=fr.function_name,
            )
    return None


@contextlib.contextmanager
def _capturing_pp_context() -> Iterator[list[core.JaxprPpContext]]:
    """Record every ``core.JaxprPpContext`` created inside (``pp_toplevel_jaxpr`` makes one)."""
    created: list[core.JaxprPpContext] = []
    original = core.JaxprPpContext

    me = threading.get_ident()

    class _Recorded(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if threading.get_ident() == me:  # not a context another thread prints with
                created.append(self)

    with _capture_lock:
        core.JaxprPpContext = _Recorded
        try:
            yield created
        finally:
            core.JaxprPpContext = original


def print_with_context(jaxpr: core.Jaxpr) -> tuple[str, core.JaxprPpContext]:
    """``str(jaxpr)`` and the ``JaxprPpContext`` JAX used to print it (its var names)."""
    with _capturing_pp_context() as created:
        text = str(jaxpr)
    if not created:
        raise RuntimeError("core.pp_toplevel_jaxpr did not create a JaxprPpContext")
    return text, created[0]


def _var_view(v: Any, ctx: core.JaxprPpContext) -> VarView:
    return VarView(
        name=str(core.pp_var(v, ctx)),
        aval=aval_view(v.aval),
        literal=isinstance(v, core.Literal),
    )


def _param_text(key: str, value: Any, ctx: core.JaxprPpContext) -> str:
    doc = core.pp_kv_pair(key, value, ctx, core.JaxprPpSettings())
    return doc.format()[len(key) + 1 :]


def _inner_text(jaxpr: core.Jaxpr, ctx: core.JaxprPpContext, settings: core.JaxprPpSettings) -> str:
    """JAX's printout of an inner jaxpr. A jaxpr used more than once is printed once at the top
    of the text (``let _uniform = { lambda ... } in``) and by name where used; here we print its
    body in full (``core.pp_jaxpr_skeleton``, as ``core.pp_jaxpr`` does for unshared ones)."""
    if jaxpr in ctx.shared_jaxprs:
        doc = core.pp_jaxpr_skeleton(
            jaxpr, lambda: core.pp_eqns(jaxpr.eqns, ctx, settings), ctx, settings
        )
        return str(doc.format())
    return str(core.pp_jaxpr(jaxpr, ctx, settings).format())


def _inner_jaxprs(eqn: core.JaxprEqn, ctx: core.JaxprPpContext) -> list[InnerJaxprView]:
    settings = core.JaxprPpSettings()
    name = eqn.params.get("name")
    out: list[InnerJaxprView] = []
    for key in sorted(eqn.params):
        value = eqn.params[key]
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            if isinstance(v, (core.Jaxpr, core.ClosedJaxpr)):
                inner = v.jaxpr if isinstance(v, core.ClosedJaxpr) else v
                out.append(
                    InnerJaxprView(
                        param=key,
                        name=str(name) if name is not None else None,
                        text=_inner_text(inner, ctx, settings),
                    )
                )
    return out


def eqn_view(index: int, eqn: core.JaxprEqn, ctx: core.JaxprPpContext) -> EqnView:
    """The view of ``eqn`` (the ``index``-th eqn of its jaxpr), names from ``ctx``."""
    return EqnView(
        index=index,
        primitive=eqn.primitive.name,
        params={k: _param_text(k, eqn.params[k], ctx) for k in sorted(eqn.params)},
        invars=[_var_view(v, ctx) for v in eqn.invars],
        outvars=[_var_view(v, ctx) for v in eqn.outvars],
        effects=effect_names(eqn.effects),
        source=snippet_source(eqn.source_info.traceback),
        text=core.pp_eqn(eqn, ctx, core.JaxprPpSettings()).format(),
        inner_jaxprs=_inner_jaxprs(eqn, ctx),
    )


def effect_names(effects: Any) -> list[str]:
    """``str`` of each effect (``core.Effects``), sorted for a stable order."""
    return sorted(str(e) for e in effects)


def jaxpr_view(closed_jaxpr: core.ClosedJaxpr) -> JaxprView:
    """The :class:`JaxprView` of ``closed_jaxpr``: ``text == str(closed_jaxpr)`` byte for byte."""
    jaxpr = closed_jaxpr.jaxpr
    text, ctx = print_with_context(jaxpr)
    return JaxprView(
        text=text,
        constvars=[
            ConstVarView(var=_var_view(v, ctx), value_preview=preview_value(c))
            for v, c in zip(jaxpr.constvars, closed_jaxpr.consts, strict=True)
        ],
        invars=[_var_view(v, ctx) for v in jaxpr.invars],
        outvars=[_var_view(v, ctx) for v in jaxpr.outvars],
        eqns=[eqn_view(i, e, ctx) for i, e in enumerate(jaxpr.eqns)],
        effects=effect_names(closed_jaxpr.effects),
    )


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
