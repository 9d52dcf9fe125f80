"""The backward pass, one linear eqn at a time, through JAX's own transpose rules.

This is what ``jax.vjp`` / ``jax.grad`` do in JAX 0.10.2 (``jax/_src/api.py`` ``vjp`` and
``_vjp3_bwd``), opened up so that each step can be seen:

1. :func:`linearize_vjp` calls ``ad.linearize(fun, primals, is_vjp=True)`` exactly as
   ``jax.vjp`` does (primals canonicalised with ``dtypes.canonicalize_value``). It returns the
   linear jaxpr (``constvars`` = the residuals, one ``invar`` per primal leaf, one ``outvar`` per
   output whose tangent is not a symbolic zero) and the residual *values* (concrete arrays: the
   forward pass ran on the user's arguments).
   While it runs, ``LinearizeTrace.process_primitive`` (and the custom_jvp/custom_vjp hooks) are
   wrapped to note which primal primitive was being linearised when each tangent eqn was
   recorded (``Linearized.origin``: id of an outvar ``Var`` -> primal primitive name). That is
   ``primal_primitive``: e.g. the ``mul`` emitted by ``sqrt``'s rule.
2. :func:`walk` is ``ad.backward_pass3`` (ad.py) with a recorder: the same forward evaluation of
   non-linear eqns, the same ``ad.ValAccum`` per linear variable (a subclass that logs each
   ``accum`` call), the same reverse order, the same rule lookup (``ad.fancy_transposes`` first,
   which receive the accumulators and call ``accum`` themselves; then
   ``ad.get_primitive_transpose``, called with ``ad.UndefinedPrimal`` for linear inputs, whose
   results are accumulated). Accumulation is ``ad.add_tangents`` (inside ``ValAccum.accum``):
   the first non-zero write *sets* the value, later ones *accumulate* (``add_jaxvals``). So the
   final cotangents are bit-identical to ``jax.vjp`` / ``jax.grad`` (tested).

Public API (stable; the ``nan_finder`` exhibit builds on it):

* ``linearize_vjp(fun, primals) -> Linearized``; ``noting_caches()``: a context to run JAX's
  own ``jax.grad`` in first, so that ``linearize_vjp`` then hits JAX's caches
* ``seed_cotangents(lin) -> list``: 1.0 for a scalar output (``lax._one_vjp``, as ``jax.grad``);
  ``grad_seed(lin) -> (list, text)``: the same, or all ones for one non-scalar floating output
* ``plain_backward_pass(lin, cts_out) -> list``: the same backward pass with nothing recorded
* ``walk(lin, cts_out, on_step=None) -> WalkResult``; ``on_step(StepRecord)`` is called after
  each step and may return ``True`` to stop the walk there (``WalkResult.stopped``).
* ``inside(lin, record) -> Linearized | None``: the body of a ``jit``, ``cond`` (the branch
  taken) or ``remat2`` (``jax.checkpoint``) step, to walk with the step's cotangents;
  ``walk_scan_body(lin, record, on_step)``: a ``scan`` step's backward pass one iteration at a
  time (the nan_finder descends into both)
* ``linear_jaxpr_staged(lin) -> LinearJaxprRecord`` and ``StepRecord.view`` (a
  :class:`TransposeStepView`): records (design 0059) that the transpose exhibit makes its
  ``linear_jaxpr_staged`` and ``transpose_stepped`` events of, field by field
  (``exhibits/transpose/walk_events.py``); ``value_view(x, role, var=None) -> ValueView``,
  ``is_nonfinite(x)``.

Writes of a symbolic ``ad.Zero`` change nothing and are not recorded. Call-like eqns (``jit``,
``scan``, ``cond``, ``custom_lin``, ``remat``) are one step each: their fancy transpose runs a
whole inner backward pass. Ref primitives (``ref_p``...) are walked as ``backward_pass3`` does
but not recorded as steps.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

import jax.numpy as jnp
import numpy as np
from jax._src import config, core, source_info_util
from jax._src.dtypes import canonicalize_value
from jax._src.interpreters import ad
from jax._src.interpreters import partial_eval as pe
from jax._src.lax import lax as lax_internal
from jax._src.tree_util import FlatTree

from jaxscope.internals.ad_rules import transpose_rule_view
from jaxscope.internals.interpret import Env, EqnHook, interpret
from jaxscope.internals.patching import patched
from jaxscope.internals.previews import Previews, min_preview_chars
from jaxscope.internals.views import (
    PREVIEW_CHARS,
    aval_view,
    eqn_text,
    jaxpr_view,
    preview_value,
    print_with_context,
    snippet_source,
)
from jaxscope.protocol import JaxprView, PendingPreview, RuleView, SourceLoc, ValueRole, ValueView
from jaxscope.user_text import exception_class, exception_text

if TYPE_CHECKING:
    from jax._src.state.types import AbstractRef

source_info_util.register_exclusion(__file__)

# Longest value preview in a step card (characters).
STEP_PREVIEW_CHARS = 400
_patch_lock = threading.RLock()


@dataclass
class Linearized:
    """What ``ad.linearize(fun, primals, is_vjp=True)`` returned (as inside ``jax.vjp``).

    ``jaxpr``: the linear jaxpr (``core.Jaxpr``; constvars are the residuals, invars one per
    primal leaf, outvars one per output leaf with a non-zero tangent); ``residuals``: the values
    of its constvars; ``out_primals``: the flat primal outputs; ``out_known[i]``: output ``i``
    has a symbolic-zero tangent (no outvar); ``in_tree``/``out_tree``: pytree structures of
    ``primals`` and of the output; ``origin``: ``id(outvar)`` -> the primal primitive whose
    linearisation recorded that eqn.
    """

    jaxpr: core.Jaxpr
    residuals: list[Any]
    out_primals: list[Any]
    out_known: list[bool]
    in_tree: Any
    out_tree: Any
    origin: dict[int, str] = field(default_factory=dict)
    keep: list[Any] = field(default_factory=list, repr=False)
    shown: _Shown = field(default_factory=lambda: _Shown(), repr=False, compare=False)

    def closed(self) -> core.ClosedJaxpr:
        """The linear jaxpr closed over the residual values (printed ``{ lambda a b; c. ...}``)."""
        return core.ClosedJaxpr(self.jaxpr, self.residuals)

    def primal_primitive(self, eqn: core.JaxprEqn) -> str | None:
        """The primal primitive whose JVP/linearisation rule emitted ``eqn`` (None if unknown)."""
        for v in eqn.outvars:
            name = self.origin.get(id(v))
            if name is not None:
                return name
        return None


@dataclass
class WriteRecord:
    """One ``accum`` into a linear variable: ``mode`` set (first non-zero write) or accumulate,
    ``contribution`` the cotangent sent, ``running`` the value after ``ad.add_tangents``."""

    var: core.Var
    mode: Literal["set", "accumulate"]  # CotangentWrite.mode
    contribution: Any
    running: Any


@dataclass(frozen=True)
class CotangentWriteView:
    """One write of a step as shown: the linear variable's name, ``set`` or ``accumulate``, the
    contribution and the running value (the transpose exhibit's ``CotangentWrite``)."""

    var: str
    mode: Literal["set", "accumulate"]
    contribution: ValueView
    running: ValueView


@dataclass(frozen=True)
class TransposeStepView:
    """One step as shown (the transpose exhibit's ``transpose_stepped`` event, field by field):
    the eqn, its rule, the cotangents in, the arguments the rule saw, the writes, and the
    error its rule raised (``None`` for a step that ran)."""

    step: int
    eqn_index: int
    primitive: str
    primal_primitive: str | None
    source: SourceLoc | None
    rule: RuleView | None
    eqn_text: str
    cts_in: list[ValueView]
    args: list[ValueView]
    writes: list[CotangentWriteView]
    error_class: str | None
    error: str | None


@dataclass(frozen=True)
class LinearJaxprRecord:
    """The linear jaxpr's view and its residuals' values (the transpose exhibit's
    ``linear_jaxpr_staged`` event, less the ``output_leaf`` its probe adds)."""

    jaxpr: JaxprView
    residuals: list[ValueView]


@dataclass
class StepRecord:
    """One step: the transpose rule of ``eqn`` (``jaxpr.eqns[eqn_index]``) ran.

    ``cts_in``: the cotangent of each outvar (array or ``ad.Zero``); ``args``: each invar's
    value as the rule saw it (array, literal value, or ``ad.UndefinedPrimal`` for a linear input);
    ``writes``: the accumulations the step made; ``view``: the step as shown (its values'
    previews), a :class:`TransposeStepView`.
    """

    step: int
    eqn_index: int
    eqn: core.JaxprEqn
    primal_primitive: str | None
    cts_in: list[Any]
    args: list[Any]
    writes: list[WriteRecord]
    make_view: Callable[[], TransposeStepView] = field(repr=False, compare=False)
    # The exception the eqn's transpose rule raised (a failing step, see :func:`walk`'s
    # ``on_error``); ``None`` for a step that ran.
    error: Exception | None = None

    @functools.cached_property
    def view(self) -> TransposeStepView:
        """The step as shown (built on first use: previews cost, and a walk that only looks for
        a NaN needs the view of one step)."""
        return self.make_view()

    @property
    def nonfinite(self) -> bool:
        """True when a cotangent arriving or written in this step holds a NaN or an Inf."""
        return any(is_nonfinite(c) for c in self.cts_in) or any(
            is_nonfinite(w.contribution) or is_nonfinite(w.running) for w in self.writes
        )


@dataclass
class WalkResult:
    """``cotangents``: one per primal leaf (``ad.instantiate_zeros`` applied, as ``jax.vjp``),
    in ``lin.in_tree`` order; ``steps`` in walk order; ``stopped`` true when ``on_step`` stopped
    the walk early (then ``cotangents`` are the partial sums so far)."""

    cotangents: list[Any]
    steps: list[StepRecord]
    stopped: bool = False

    def unflatten(self, in_tree: Any) -> Any:
        """The cotangents in the structure of the primals (a tuple, one entry per argument)."""
        return in_tree.unflatten(self.cotangents)


# ---- values -----------------------------------------------------------------------------------


def is_nonfinite(x: Any) -> bool:
    """True when ``x`` is a floating array holding a NaN or an Inf (Zero/None/abstract: False)."""
    if x is None or type(x) is ad.Zero or isinstance(x, ad.UndefinedPrimal):
        return False
    try:
        arr = np.asarray(x)
    except Exception:
        return False
    return bool(np.issubdtype(arr.dtype, np.inexact) and not np.all(np.isfinite(arr)))


def value_view(x: Any, role: ValueRole, var: str | None = None) -> ValueView:
    """A ``ValueView`` of ``x``: an array, a Python/numpy scalar, ``ad.Zero`` (``zero=True``,
    no preview) or ``ad.UndefinedPrimal`` (no preview)."""
    return _Shown().view(x, role, var)


def shorter_preview(preview: str, max_chars: int = STEP_PREVIEW_CHARS) -> str:
    """``preview_value(x, max_chars)`` from ``preview_value(x, longer)`` (``longer >=
    max_chars``): both cut the same full printout, the longer one later (tested)."""
    if len(preview) <= max_chars:
        return preview
    return preview[: max_chars - 1] + "…"


class _Shown:
    """Preview text (or a preview printed when asked: ``jaxscope.internals.previews``) and
    non-finiteness per value shown, each computed once: by object (a cotangent written in one
    step is the next step's cotangent in, a ``set`` write's running value is its contribution, a
    residual is an argument of several steps), then by content (``Previews``: equal arrays print
    equally, the text is a function of dtype, shape and bytes)."""

    def __init__(self, previews: Previews | None = None) -> None:
        self.previews = previews if previews is not None else Previews()
        self.by_id: dict[int, tuple[Any, str | PendingPreview, bool]] = {}

    def view(self, x: Any, role: ValueRole, var: str | None = None) -> ValueView:
        if type(x) is ad.Zero:
            return ValueView(role=role, aval=aval_view(x.aval), zero=True, var=var)
        if isinstance(x, ad.UndefinedPrimal):
            return ValueView(role=role, aval=aval_view(x.aval), var=var)
        hit = self.by_id.get(id(x))
        if hit is None or hit[0] is not x:
            if self.previews.on_demand:
                hit = self.by_id[id(x)] = (x, self._later(x), False)
            else:
                hit = self.by_id[id(x)] = (x, self._preview(x), is_nonfinite(x))
        preview = hit[1]
        view = ValueView(
            role=role,
            aval=aval_view(core.typeof(x)),
            preview=preview if isinstance(preview, str) else None,
            var=var,
            nonfinite=hit[2],
        )
        return view if isinstance(preview, str) else view.with_pending(preview)

    def seed(self, x: Any, preview: str) -> None:
        """Take ``preview`` (``preview_value(x, max_chars)`` for any ``max_chars`` >=
        ``STEP_PREVIEW_CHARS``, e.g. a jaxpr view's constvar preview) as ``x``'s preview."""
        if id(x) not in self.by_id:
            self.by_id[id(x)] = (x, shorter_preview(preview), is_nonfinite(x))

    def _later(self, x: Any) -> PendingPreview:
        """For a page's capture (design 0068): ``x``'s preview and non-finiteness, both computed
        (host copy, print, ``isfinite``) only when a step holding it is serialised whole; the
        text is what an eager capture prints (:meth:`_printed`)."""
        aval = core.typeof(x)
        shape = tuple(getattr(aval, "shape", ()))
        try:
            kind = np.dtype(aval.dtype).kind
        except TypeError:  # an extended dtype (a PRNG key's)
            kind = ""
        least = min_preview_chars(shape, kind, STEP_PREVIEW_CHARS) if kind in "biufc" else 0
        return PendingPreview(
            functools.partial(self._printed, x),
            least if shape or not kind else 1,
            costly=True,
            nonfinite=functools.partial(is_nonfinite, x),
        )

    def _printed(self, x: Any) -> str:
        try:
            arr = np.asarray(x)
        except Exception:  # e.g. a PRNG key array: preview_value shows JAX's repr
            return preview_value(x, STEP_PREVIEW_CHARS)
        return self.previews.text(arr, STEP_PREVIEW_CHARS)

    def _preview(self, x: Any) -> str | PendingPreview:
        try:
            arr = np.asarray(x)
        except Exception:  # e.g. a PRNG key array: preview_value shows JAX's repr
            return preview_value(x, STEP_PREVIEW_CHARS)
        return self.previews.preview(arr, STEP_PREVIEW_CHARS)


# ---- linearize ----------------------------------------------------------------------------


def _frame_eqns(trace: Any) -> list[Any] | None:
    frame = getattr(trace, "frame", None)
    return getattr(frame, "tracing_eqns", None)


def _recorded(eqns: list[Any], start: int) -> list[Any]:
    out = []
    for e in eqns[start:]:
        e = e() if callable(e) and not hasattr(e, "outvars") else e
        if e is not None:
            out.append(e)
    return out


@contextlib.contextmanager
def _noting_origins(origin: dict[int, str], keep: list[Any]) -> Iterator[None]:
    """Wrap ``LinearizeTrace.process_primitive`` (and the custom_jvp/custom_vjp hooks) so that
    each tangent eqn recorded while a primal primitive is linearised is attributed to it (the
    innermost primitive wins: ``setdefault``)."""
    names = ["process_primitive", "process_custom_jvp_call", "process_custom_vjp_call"]
    originals = {
        (cls, n): cls.__dict__[n]
        for cls in (ad.LinearizeTrace, ad.JVPTrace)
        for n in names
        if n in cls.__dict__
    }

    def wrap(orig: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(orig)
        def wrapped(self: Any, primitive: Any, *rest: Any, **kw: Any) -> Any:
            # LinearizeTrace records tangent eqns in its tangent trace; JVPTrace (the body of a
            # ``jax.checkpoint``, whose JVP rule traces ``ad.jvp_jaxpr``) in its parent trace,
            # primal and tangent eqns alike (the primal ones are never walked as steps).
            tangent_trace = getattr(self, "tangent_trace", None)
            eqns = _frame_eqns(self.parent_trace if tangent_trace is None else tangent_trace)
            start = len(eqns) if eqns is not None else 0
            out = orig(self, primitive, *rest, **kw)
            if eqns is not None:
                for e in _recorded(eqns, start):
                    for v in e.outvars:
                        keep.append(v)
                        origin.setdefault(id(v), primitive.name)
            return out

        return wrapped

    orig_inline = pe.inline_jaxpr_into_trace

    def inline(trace: Any, src: Any, jaxpr: core.Jaxpr, consts: Any, *args: Any) -> Any:
        # jnp's jit(inline=True) wrappers: the inner tangent eqns (attributed by the inner
        # process_primitive) are re-emitted in order with new vars; carry their origin over.
        eqns = _frame_eqns(trace)
        start = len(eqns) if eqns is not None else 0
        out = orig_inline(trace, src, jaxpr, consts, *args)
        if eqns is not None:
            inner = iter(jaxpr.eqns)
            for e in _recorded(eqns, start):
                for old in inner:
                    if old.primitive is e.primitive:
                        name = next((origin[id(v)] for v in old.outvars if id(v) in origin), None)
                        if name is not None:
                            for v in e.outvars:
                                keep.append(v)
                                origin.setdefault(id(v), name)
                        break
        return out

    with _patch_lock:
        for (cls, n), orig in originals.items():
            setattr(cls, n, wrap(orig))
        pe.inline_jaxpr_into_trace = inline
        try:
            yield
        finally:
            for (cls, n), orig in originals.items():
                setattr(cls, n, orig)
            pe.inline_jaxpr_into_trace = orig_inline


# Tangent jaxpr returned by ``ad._linearize_jaxpr`` -> the primal primitive of each of its eqns,
# noted when that jaxpr was traced under ``_noting_origins`` (weakly held, as JAX's cache is).
_INNER_ORIGINS: weakref.WeakKeyDictionary[core.Jaxpr, list[str | None]] = (
    weakref.WeakKeyDictionary()
)


@contextlib.contextmanager
def _cached_inner_origins(origin: dict[int, str], keep: list[Any]) -> Iterator[None]:
    """Inner jaxprs (``jit``, jnp's inline wrappers, ``scan``/``cond`` bodies) are linearised by
    ``ad._linearize_jaxpr``, and a ``jax.checkpoint`` body is differentiated by
    ``ad._jvp_jaxpr`` (``remat_jvp``), both ``weakref_lru_cache`` s: on a hit no tangent eqn is
    recorded, so ``_noting_origins`` sees nothing. Wrap them: a miss (traced now, under our eyes)
    notes each tangent eqn's primal primitive in ``_INNER_ORIGINS``; a hit puts those back into
    ``origin``; a hit on an entry cached before we watched (no note) is evicted and traced again.
    Same jaxprs, same values as a cold cache, without recompiling the cached primal jaxprs."""

    def watched(cached: Any, tangent_of: Callable[[Any], core.Jaxpr]) -> Callable[..., Any]:
        def traced(jaxpr: Any, *rest: Any) -> Any:
            misses = cached.cache_info().misses
            out = cached(jaxpr, *rest)
            tangent = tangent_of(out)
            if cached.cache_info().misses != misses:
                _INNER_ORIGINS[tangent] = [
                    next((origin[id(v)] for v in e.outvars if id(v) in origin), None)
                    for e in tangent.eqns
                ]
                return out
            names = _INNER_ORIGINS.get(tangent)
            if names is None:
                cached.evict_weakref(jaxpr)
                return traced(jaxpr, *rest)
            for e, name in zip(tangent.eqns, names, strict=True):
                if name is not None:
                    for v in e.outvars:
                        keep.append(v)
                        origin.setdefault(id(v), name)
            return out

        return traced

    with (
        _patch_lock,
        patched(
            ad,
            _linearize_jaxpr=watched(ad._linearize_jaxpr, lambda out: out[-1].jaxpr),
            _jvp_jaxpr=watched(ad._jvp_jaxpr, lambda out: out[0].jaxpr),
        ),
    ):
        yield


@contextlib.contextmanager
def noting_caches() -> Iterator[None]:
    """Run JAX's own AD (an eager ``jax.grad``/``jax.vjp``) under this, and the inner jaxprs it
    linearises are noted in JAX's caches as :func:`linearize_vjp` notes them
    (``_cached_inner_origins``): a later :func:`linearize_vjp` of the same function hits those
    entries instead of evicting them and tracing (and compiling) their primal jaxprs again
    (35 compiles, ~2 s, for a 12-layer transformer). Values are not touched: the wrappers only
    look at the eqns JAX records."""
    origin: dict[int, str] = {}
    keep: list[Any] = []
    with _noting_origins(origin, keep), _cached_inner_origins(origin, keep):
        yield


def linearize_vjp(
    fun: Callable[..., Any], primals: Sequence[Any], previews_on_demand: bool = False
) -> Linearized:
    """Linearise ``fun`` at ``primals`` exactly as ``jax.vjp(fun, *primals)`` does
    (``ad.linearize(..., is_vjp=True)``); raises what ``jax.vjp`` raises.
    ``previews_on_demand``: the walk's step events print their value previews when serialised
    (a page's run: ``jaxscope.internals.previews``), not when built; they serialise the same."""
    canon = lambda x: x if isinstance(x, core.Tracer) else canonicalize_value(x)  # noqa: E731
    primals_ft = FlatTree.flatten(tuple(primals)).map(canon)
    origin: dict[int, str] = {}
    keep: list[Any] = []  # the keyed objects stay alive, so their ids stay unique
    with _noting_origins(origin, keep), _cached_inner_origins(origin, keep):
        out_ft, out_known, jaxpr, residuals = ad.linearize(fun, primals_ft, is_vjp=True)
    return Linearized(
        jaxpr=jaxpr,
        residuals=list(residuals),
        out_primals=list(out_ft),
        out_known=list(out_known),
        in_tree=primals_ft.tree,
        out_tree=out_ft.tree,
        origin=origin,
        keep=keep,
        shown=_Shown(Previews(on_demand=previews_on_demand)),
    )


def seed_cotangents(lin: Linearized) -> list[Any]:
    """The output cotangents ``jax.grad`` starts from: ``lax._one_vjp(out)`` (1 of the output's
    dtype, shape ``()``) for the single scalar output. Raises JAX's ``TypeError`` ("Gradient only
    defined for scalar-output functions", or "grad requires real-valued outputs") otherwise, via
    ``jax.grad``'s own checks."""
    from jax._src.api import _check_output_dtype_grad, _check_scalar

    if len(lin.out_primals) != 1:
        _check_scalar(lin.out_tree.unflatten(lin.out_primals))
    (out,) = lin.out_primals
    _check_scalar(out)
    # then, as jax.grad does, its dtype: a complex, integer or bool output is refused before
    # any walk (nan_finder walked a complex loss, then failed in jax.grad: break-it review)
    _check_output_dtype_grad(False, out)
    return [lax_internal._one_vjp(out)]


def grad_seed(lin: Linearized) -> tuple[list[Any], str]:
    """The output cotangents a walk starts from, and how to say it. A scalar output: 1.0
    (:func:`seed_cotangents`, as ``jax.grad``), said ``"1.0"``. One non-scalar floating output:
    all ones of its shape and dtype (``jax.vjp`` with a ones cotangent: the gradient of
    ``sum(f)``), said ``"ones(f32[3]): ..."``. Anything else: ``seed_cotangents``' JAX error."""
    outs = lin.out_primals
    if len(outs) == 1 and np.shape(outs[0]) != () and is_float(outs[0]):
        (out,) = outs
        short = core.typeof(out).str_short(short_dtypes=True)
        seed = [jnp.ones(np.shape(out), jnp.result_type(out))]
        return seed, f"ones({short}): the output is not a scalar; this is the gradient of sum(f)"
    return seed_cotangents(lin), "1.0"


def is_float(x: Any) -> bool:
    """True for an array (or scalar) of a floating dtype (bfloat16 included)."""
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.floating))


def plain_backward_pass(lin: Linearized, cts_out: Sequence[Any]) -> list[Any]:
    """The backward pass of ``lin`` as ``jax.vjp``'s function runs it, with nothing recorded:
    ``ad.backward_pass3(jaxpr, True, residuals, accums, cts)`` with one ``ad.ValAccum`` per
    primal leaf, then ``freeze`` + ``instantiate_zeros`` (``api._vjp3_bwd``). One cotangent per
    primal leaf (arrays of the primal's shape and tangent dtype). The reference the walk is held
    bit-identical to, and the cost floor ``bench/ad_overhead.py`` reports."""
    cts = [ct for ct, known in zip(cts_out, lin.out_known, strict=True) if not known]
    accums = [ad.ValAccum(v.aval.to_ct_aval()) for v in lin.jaxpr.invars]
    ad.backward_pass3(lin.jaxpr, True, lin.residuals, accums, cts)
    return [ad.instantiate_zeros(a.freeze()) for a in accums]


# ---- the walk -----------------------------------------------------------------------------


class _RecordingAccum(ad.ValAccum):
    """``ad.ValAccum`` that logs every non-zero ``accum`` (set vs accumulate) into ``log``."""

    def __init__(self, aval: Any, var: core.Var, log: list[WriteRecord]) -> None:
        super().__init__(aval)
        self.var = var
        self.log = log

    def accum(self, x: Any) -> None:
        before = self.val
        super().accum(x)
        if x is None or type(x) is ad.Zero:
            return
        self.log.append(
            WriteRecord(self.var, "set" if type(before) is ad.Zero else "accumulate", x, self.val)
        )


class _ForwardHalf(EqnHook):
    """The forward half of ``ad.backward_pass3``, as the hook of one :func:`interpret`: a ref
    eqn's output gets the ``RefAccum``/``ValAccum`` ``backward_pass3`` gives it; an eqn reading a
    cotangent accumulator is linear, its outputs get :class:`_RecordingAccum` s (logging into
    ``log``); both are noted in ``lin_eqns`` (index, eqn), for the reverse walk. Every other eqn
    is evaluated as ``backward_pass3`` binds it (under ``ad._name_stack_ctx``, not the user's
    traceback: nothing is traced here)."""

    def __init__(self, log: list[WriteRecord]) -> None:
        self.log = log
        self.lin_eqns: list[tuple[int, core.JaxprEqn]] = []

    def evaluate(self, index: int, eqn: core.JaxprEqn, invals: list[Any], env: Env) -> list[Any]:
        if eqn.primitive.ref_primitive:
            (v,) = eqn.outvars
            self.lin_eqns.append((index, eqn))
            if eqn.primitive is core.ref_p or eqn.primitive is core.empty_ref_p:
                # A new ref's aval is a state.types.AbstractRef; JAX's Var types it as the base
                # class (ad.py's own backward pass reads .inner_aval the same way).
                ref_aval = cast("AbstractRef", v.aval)
                return [ad.RefAccum(ref_aval.inner_aval.to_ct_aval())]
            if eqn.primitive is core.freeze_p:
                return [ad.ValAccum(v.aval.to_ct_aval())]
            if eqn.primitive is core.accum_grad_in_ref_p:
                return [ad.RefAccum(v.aval.to_ct_aval())]
            raise AssertionError(f"unknown ref primitive {eqn.primitive}")
        if any(isinstance(x, ad.GradAccum) for x in invals):
            self.lin_eqns.append((index, eqn))
            return [_RecordingAccum(v.aval.to_ct_aval(), v, self.log) for v in eqn.outvars]
        params = eqn.primitive.get_bind_params(eqn.params)
        with eqn.ctx.manager, ad._name_stack_ctx(eqn.source_info):
            ans = eqn.primitive.bind(*invals, **params)
        return list(ans) if eqn.primitive.multiple_results else [ans]


def walk(
    lin: Linearized,
    cts_out: Sequence[Any],
    on_step: Callable[[StepRecord], bool | None] | None = None,
    on_error: Callable[[StepRecord], None] | None = None,
) -> WalkResult:
    """Run the backward pass of ``lin`` from ``cts_out`` (one per output leaf, known outputs
    included, as ``jax.vjp``'s function takes them), one linear eqn at a time.

    When an eqn's transpose rule raises (``ad.get_primitive_transpose``'s NotImplementedError
    for a primitive with no rule, or the rule itself, e.g. a custom_vjp ``bwd``), the exception
    propagates as from ``ad.backward_pass3``; with ``on_error``, that step is first handed to
    ``on_error`` as a :class:`StepRecord` whose ``error`` is the exception (``writes``: any
    accumulation the rule made before raising).

    Mirrors ``ad.backward_pass3(jaxpr, True, residuals, accums, cts)`` as ``_vjp3_bwd`` calls it.
    """
    jaxpr = lin.jaxpr
    cts = [ct for ct, known in zip(cts_out, lin.out_known, strict=True) if not known]
    log: list[WriteRecord] = []
    text_ctx = print_with_context(jaxpr)[1]
    names: dict[Any, str] = {}

    def name(v: Any) -> str:
        text = names.get(v)
        if text is None:
            text = names[v] = str(core.pp_var(v, text_ctx))
        return text

    rules: dict[Any, RuleView | None] = {}  # one lookup per primitive (the tables are fixed here)

    in_accums = [_RecordingAccum(v.aval.to_ct_aval(), v, log) for v in jaxpr.invars]
    steps: list[StepRecord] = []

    def finish(stopped: bool) -> WalkResult:
        grads = [ad.instantiate_zeros(a.freeze()) for a in in_accums]
        return WalkResult(cotangents=grads, steps=steps, stopped=stopped)

    if all(type(ct) is ad.Zero for ct in cts) and not jaxpr.effects:
        return finish(False)

    # The forward half of ``backward_pass3`` is one interpretation (:class:`_ForwardHalf`); the
    # backward half below walks its linear eqns in reverse, popping cotangents from its env: a
    # transposition, not an evaluation, so it is not :func:`interpret`'s forward loop.
    forward = _ForwardHalf(log)
    ran = interpret(jaxpr, lin.residuals, in_accums, forward)
    env, lin_eqns = ran.env, forward.lin_eqns
    assert ran.outvals is not None  # the forward half never stops

    def read(x: Any) -> Any:
        return x.val if isinstance(x, core.Literal) else env[x]

    for acc, ct in zip(ran.outvals, cts, strict=True):
        if isinstance(acc, ad.GradAccum):
            acc.accum(ct)
    log.clear()  # the seed is not a step's write

    with source_info_util.transform_name_stack("transpose"):
        for index, eqn in reversed(lin_eqns):
            with eqn.ctx.manager, ad._name_stack_ctx(eqn.source_info):
                if eqn.primitive is core.empty_ref_p:
                    env.pop(eqn.outvars[0]).freeze()
                    continue
                if eqn.primitive.ref_primitive:
                    ct = env.pop(eqn.outvars[0]).freeze()
                    acc = read(eqn.invars[0])
                    if isinstance(acc, ad.GradAccum):
                        acc.accum(ct)
                    log.clear()
                    continue
                cts_in = [env.pop(v).freeze() for v in eqn.outvars]
                primals = list(map(read, eqn.invars))
                ct_arg = cts_in if eqn.primitive.multiple_results else cts_in[0]
                error: Exception | None = None
                try:
                    if eqn.primitive in ad.fancy_transposes:
                        rule = ad.fancy_transposes[eqn.primitive]
                        rule(ct_arg, *primals, **eqn.params)
                    else:
                        rule = ad.get_primitive_transpose(eqn.primitive)
                        up = lambda x: (  # noqa: E731
                            ad.UndefinedPrimal(x.aval) if isinstance(x, ad.GradAccum) else x
                        )
                        if eqn.primitive.call_primitive:
                            cts_in_avals = [v.aval for v in eqn.outvars]
                            params = dict(eqn.params)
                            call_jaxpr = params.pop("call_jaxpr")
                            cts_out = rule(
                                params, call_jaxpr, map(up, primals), ct_arg, cts_in_avals
                            )
                        else:
                            cts_out = rule(ct_arg, *map(up, primals), **eqn.params)
                        for x, ct in zip(primals, cts_out, strict=False):
                            if isinstance(x, ad.GradAccum):
                                x.accum(ct)
                except Exception as exc:  # recorded as the failing step, then re-raised
                    if on_error is None:
                        raise
                    error = exc
            args = [
                ad.UndefinedPrimal(x.aval) if isinstance(x, ad.GradAccum) else x for x in primals
            ]
            writes = list(log)
            log.clear()
            record = StepRecord(
                step=len(steps),
                eqn_index=index,
                eqn=eqn,
                primal_primitive=lin.primal_primitive(eqn),
                cts_in=cts_in,
                args=args,
                writes=writes,
                make_view=functools.partial(
                    _step_view,
                    len(steps),
                    index,
                    eqn,
                    lin,
                    cts_in,
                    args,
                    writes,
                    name,
                    text_ctx,
                    rules,
                    error,
                ),
                error=error,
            )
            if error is not None:
                assert on_error is not None
                on_error(record)
                raise error
            steps.append(record)
            if on_step is not None and on_step(record):
                return finish(True)
    return finish(False)


# Call-like eqns whose transpose is a backward pass over their own jaxpr: ``jit`` (pjit's
# ``_pjit_transpose_fancy``; under ``jax_debug_nans`` JAX itself re-runs exactly that pass,
# de-optimised: ``ad.backward_pass3(jaxpr.jaxpr, False, jaxpr.consts, args, cts_in)``) and
# ``cond`` (``_cond_transpose_fancy``: the same pass over ``branches[index]``, the branch the
# residual ``index`` selects) and ``remat2`` (``jax.checkpoint``: ``remat_transpose``
# partial-evaluates its body into the non-linear part, recomputed from the residual arguments,
# and the linear part, and runs ``ad.backward_pass`` over the latter: the walk of the body does
# both, evaluating its non-linear eqns forward and transposing the linear ones).
DESCENDABLE = ("jit", "cond", "remat2")


def inside(lin: Linearized, record: StepRecord) -> Linearized | None:
    """The body of the call-like eqn of ``record`` (a ``jit`` or ``remat2`` step; for a ``cond``
    step, the branch its ``index`` residual selects) as a :class:`Linearized`
    whose walk is the backward pass JAX runs for that eqn: the body's consts and the step's
    residual arguments as residuals (constvars), its linear arguments (``UndefinedPrimal`` in
    ``record.args``) as invars, every output's cotangent wanted. ``None`` for other eqns.
    Walk it with ``walk(inner, record.cts_in)``; its steps' eqns are the body's, with the user
    lines inside the called function."""
    eqn = record.eqn
    if eqn.primitive.name not in DESCENDABLE:
        return None
    args = record.args
    if eqn.primitive.name == "cond":
        index = args[0]
        if isinstance(index, ad.UndefinedPrimal):
            return None
        closed = eqn.params["branches"][int(np.asarray(index))]
        args = args[1:]
    else:
        closed = eqn.params.get("jaxpr")
        if isinstance(closed, core.Jaxpr) and not closed.constvars:  # remat2's open body
            closed = core.ClosedJaxpr(closed, [])
    if not isinstance(closed, core.ClosedJaxpr):
        return None
    if eqn.primitive.name == "remat2":
        return _remat_linear(lin, closed, args)
    body = closed.jaxpr
    residual_vars, residual_vals, linear_vars = [], [], []
    for v, a in zip(body.invars, args, strict=True):
        if isinstance(a, ad.UndefinedPrimal):
            linear_vars.append(v)
        else:
            residual_vars.append(v)
            residual_vals.append(a)
    jaxpr = body.replace(constvars=[*body.constvars, *residual_vars], invars=linear_vars)
    return _body_linearized(lin, jaxpr, [*closed.consts, *residual_vals])


def _remat_linear(lin: Linearized, closed: core.ClosedJaxpr, args: Sequence[Any]) -> Linearized:
    """A ``remat2`` body as ``remat_transpose`` (``ad_checkpoint._transpose_jaxpr``) runs it:
    ``pe.partial_eval_jaxpr_nounits`` splits it into the non-linear part, evaluated here on the
    step's residual arguments (the forward computation the checkpoint recomputes in the
    backward pass), and the linear part, whose inputs are those recomputed residuals then the
    linear arguments: that part is what is walked. (Walking the whole body would hand a
    ``scan`` or ``custom_lin`` inside it ``UndefinedPrimal`` s for the primal values it mixes
    with its tangents.) The partial-evaluated eqns are new objects: their primal primitive is
    carried over from the body's eqn with the same primitive and traceback."""
    in_lin = [isinstance(a, ad.UndefinedPrimal) for a in args]
    known_args = [a for a, linear in zip(args, in_lin, strict=True) if not linear]
    with config.mutable_array_checks(False):
        known, linear, _, _ = pe.partial_eval_jaxpr_nounits(closed, in_lin, False)
    with source_info_util.extend_name_stack("rematted_computation"):
        consts = core.jaxpr_as_fun(known)(*known_args)
    jaxpr = linear.jaxpr
    n_res = len(consts)
    jaxpr = jaxpr.replace(
        constvars=[*jaxpr.constvars, *jaxpr.invars[:n_res]], invars=jaxpr.invars[n_res:]
    )
    origin = dict(lin.origin)
    names: dict[tuple[str, int], set[str]] = {}

    def note(j: core.Jaxpr) -> None:
        for e in j.eqns:
            name = lin.primal_primitive(e)
            if name is not None:
                names.setdefault((e.primitive.name, id(e.source_info.traceback)), set()).add(name)
            for sub in core.jaxprs_in_params(e.params):
                note(sub)

    def carry(j: core.Jaxpr) -> None:
        for e in j.eqns:
            found = names.get((e.primitive.name, id(e.source_info.traceback)), set())
            if len(found) == 1:
                for v in e.outvars:
                    origin.setdefault(id(v), next(iter(found)))
            for sub in core.jaxprs_in_params(e.params):
                carry(sub)

    note(closed.jaxpr)
    carry(jaxpr)
    body = Linearized(
        jaxpr=jaxpr,
        residuals=[*linear.consts, *consts],
        out_primals=[],
        out_known=[False] * len(jaxpr.outvars),
        in_tree=None,
        out_tree=None,
        origin=origin,
        keep=[*lin.keep, linear, known],
        shown=lin.shown,
    )
    return body


def _body_linearized(lin: Linearized, jaxpr: core.Jaxpr, residuals: list[Any]) -> Linearized:
    """A call body to walk as :func:`walk` walks ``lin``: ``jaxpr``'s constvars are the
    ``residuals``, its invars the linear inputs, every output's cotangent wanted; the primal
    attribution, kept objects and preview memo are ``lin``'s."""
    return Linearized(
        jaxpr=jaxpr,
        residuals=residuals,
        out_primals=[],
        out_known=[False] * len(jaxpr.outvars),
        in_tree=None,
        out_tree=None,
        origin=lin.origin,
        keep=lin.keep,
        shown=lin.shown,
    )


def call_name(record: StepRecord) -> str | None:
    """The name of a call step's callee: a ``jit``'s function name (its ``name`` param),
    ``branch i`` for a ``cond`` (``i`` the residual index that chose the branch), the
    checkpointed function's name for a ``remat2`` (its body's ``debug_info``)."""
    if record.eqn.primitive.name == "cond" and not isinstance(record.args[0], ad.UndefinedPrimal):
        return f"branch {int(np.asarray(record.args[0]))}"
    if record.eqn.primitive.name == "remat2":
        debug = getattr(record.eqn.params.get("jaxpr"), "debug_info", None)
        func = getattr(debug, "func_name", None)
        return str(func) if func else None
    name = record.eqn.params.get("name")
    return str(name) if name is not None else None


@dataclass
class ScanBodyWalk:
    """What :func:`walk_scan_body` did: ``iteration`` the (forward-order) iteration whose body
    walk ``on_step`` stopped (``None``: it never stopped), ``body`` that iteration's
    :class:`Linearized`, ``result`` its walk; ``cotangents`` what the scan step sends when no
    walk stopped (per linear argument of the scan eqn: consts summed over iterations, the carry
    after the last one, xs stacked), in the order of ``record.args``' ``UndefinedPrimal`` s."""

    iteration: int | None
    body: Linearized | None
    result: WalkResult | None
    cotangents: list[Any]
    # The first iteration (forward order, index along the scanned axis) whose extensive
    # residuals hold a NaN or an Inf: the forward pass made them there (None: none do).
    first_nonfinite_residual: int | None = None
    reverse: bool = False


def walk_scan_body(
    lin: Linearized,
    record: StepRecord,
    on_step: Callable[[StepRecord], bool | None] | None = None,
    on_iteration: Callable[[int, WalkResult], bool | None] | None = None,
) -> ScanBodyWalk | None:
    """The backward pass of a ``scan`` step, one iteration at a time: what JAX's
    ``_scan_transpose_fancy`` runs as a scan of ``ad.backward_pass3`` over the body (the
    transposed body's binders: residual consts ``ires``, the const cotangents, the carry
    cotangent, the extensive residuals ``eres`` of that iteration; cotangents in: the carry's and
    that iteration's ``ys``'), here as one :func:`walk` per iteration, last iteration first (first
    first for ``reverse=True``), eagerly. ``None`` for other eqns, or a scan with refs or an
    argument order ``_scan_transpose_fancy`` would not produce (residual consts first, linear xs
    before extensive residuals). ``on_iteration(i, result)`` is called after each iteration's
    walk and may return ``True`` to stop there (``iteration`` stays ``None``: nothing went
    bad)."""
    eqn = record.eqn
    if eqn.primitive.name != "scan":
        return None
    closed = eqn.params["jaxpr"]
    num_consts, num_carry = eqn.params["num_consts"], eqn.params["num_carry"]
    length, reverse = eqn.params["length"], eqn.params["reverse"]
    body = closed.jaxpr
    if any(
        not hasattr(v.aval, "shape") or type(v.aval).__name__ == "AbstractRef" for v in body.invars
    ):
        return None
    linear = [isinstance(a, ad.UndefinedPrimal) for a in record.args]
    consts_lin = linear[:num_consts]
    xs_lin = linear[num_consts + num_carry :]
    num_ires = consts_lin.count(False)
    num_xs_dot = xs_lin.count(True)
    if consts_lin != [False] * num_ires + [True] * (num_consts - num_ires):
        return None
    if xs_lin != [True] * num_xs_dot + [False] * (len(xs_lin) - num_xs_dot):
        return None
    ires_vars = body.invars[:num_ires]
    lin_vars = body.invars[num_ires : num_consts + num_carry + num_xs_dot]
    eres_vars = body.invars[num_consts + num_carry + num_xs_dot :]
    ires = record.args[:num_ires]
    eres = record.args[num_consts + num_carry + num_xs_dot :]
    jaxpr = body.replace(constvars=[*body.constvars, *ires_vars, *eres_vars], invars=lin_vars)
    ct_carry = [ad.instantiate_zeros(c) for c in record.cts_in[:num_carry]]
    ct_ys = record.cts_in[num_carry:]
    n_consts_dot = num_consts - num_ires
    const_cts: list[Any] = [None] * n_consts_dot
    xs_cts: list[list[Any]] = [[None] * length for _ in range(num_xs_dot)]
    order = range(length) if reverse else range(length - 1, -1, -1)
    first_bad = _first_nonfinite_row(eres, length, reverse)
    for i in order:
        body_i = _body_linearized(
            lin, jaxpr, [*closed.consts, *ires, *(np.asarray(e)[i] for e in eres)]
        )
        cts_i = [*ct_carry, *(c if type(c) is ad.Zero else np.asarray(c)[i] for c in ct_ys)]
        result = walk(body_i, cts_i, on_step)
        if not result.stopped and on_iteration is not None and on_iteration(i, result):
            return ScanBodyWalk(
                iteration=None,
                body=body_i,
                result=result,
                cotangents=[],
                first_nonfinite_residual=first_bad,
                reverse=bool(reverse),
            )
        if result.stopped:
            return ScanBodyWalk(
                iteration=i,
                body=body_i,
                result=result,
                cotangents=[],
                first_nonfinite_residual=first_bad,
                reverse=bool(reverse),
            )
        got = result.cotangents
        for k in range(n_consts_dot):
            const_cts[k] = got[k] if const_cts[k] is None else ad.add_tangents(const_cts[k], got[k])
        ct_carry = got[n_consts_dot : n_consts_dot + num_carry]
        for k in range(num_xs_dot):
            xs_cts[k][i] = got[n_consts_dot + num_carry + k]
    outs = [
        *const_cts,
        *(
            [
                c
                for c, a in zip(
                    ct_carry, record.args[num_consts : num_consts + num_carry], strict=True
                )
                if isinstance(a, ad.UndefinedPrimal)
            ]
        ),
        *(np.stack([np.asarray(x) for x in xs]) for xs in xs_cts),
    ]
    return ScanBodyWalk(
        iteration=None,
        body=None,
        result=None,
        cotangents=outs,
        first_nonfinite_residual=first_bad,
        reverse=bool(reverse),
    )


def _first_nonfinite_row(eres: Sequence[Any], length: int, reverse: bool) -> int | None:
    """The first iteration in forward order (the last index for ``reverse=True``) at which any
    floating extensive residual holds a NaN or an Inf; ``None`` when none does."""
    bad = np.zeros(length, bool)
    for e in eres:
        arr = np.asarray(e)
        if np.issubdtype(arr.dtype, np.inexact) and arr.ndim and arr.shape[0] == length:
            bad |= ~np.isfinite(arr.reshape(length, -1)).all(axis=1)
    rows = np.flatnonzero(bad)
    if rows.size == 0:
        return None
    return int(rows[-1] if reverse else rows[0])


def _arg_view(eqn_var: Any, value: Any, name: Callable[[Any], str], shown: _Shown) -> ValueView:
    if isinstance(eqn_var, core.Literal):
        return shown.view(value, "literal", str(eqn_var))
    if isinstance(value, ad.UndefinedPrimal):
        return shown.view(value, "undefined_primal", name(eqn_var))
    return shown.view(value, "residual", name(eqn_var))


def _step_view(
    step: int,
    index: int,
    eqn: core.JaxprEqn,
    lin: Linearized,
    cts_in: list[Any],
    args: list[Any],
    writes: list[WriteRecord],
    name: Callable[[Any], str],
    text_ctx: Any,
    rules: dict[Any, RuleView | None],
    error: Exception | None = None,
) -> TransposeStepView:
    if eqn.primitive not in rules:
        rules[eqn.primitive] = transpose_rule_view(eqn.primitive)
    shown = lin.shown
    return TransposeStepView(
        step=step,
        eqn_index=index,
        primitive=eqn.primitive.name,
        primal_primitive=lin.primal_primitive(eqn),
        source=snippet_source(eqn.source_info.traceback),
        rule=rules[eqn.primitive],
        eqn_text=eqn_text(eqn, text_ctx),
        cts_in=[
            shown.view(c, "cotangent", name(v)) for v, c in zip(eqn.outvars, cts_in, strict=True)
        ],
        args=[_arg_view(v, a, name, shown) for v, a in zip(eqn.invars, args, strict=True)],
        writes=[
            CotangentWriteView(
                var=name(w.var),
                mode=w.mode,
                contribution=shown.view(w.contribution, "cotangent", name(w.var)),
                running=shown.view(w.running, "cotangent", name(w.var)),
            )
            for w in writes
        ],
        # cut, and read without raising (a custom_vjp bwd may raise the user's own exception)
        error_class=None if error is None else exception_class(error),
        error=None if error is None else (exception_text(error) or exception_class(error)),
    )


def _const_preview(previews: Previews, value: Any) -> str:
    """``preview_value(value)``, printed once per content by ``previews``."""
    try:
        arr = np.asarray(value)
    except Exception:  # e.g. a PRNG key array: preview_value shows JAX's repr
        return preview_value(value)
    return previews.text(arr, PREVIEW_CHARS)


def linear_jaxpr_staged(lin: Linearized) -> LinearJaxprRecord:
    """The linear jaxpr (``str`` of ``lin.closed()``: residuals as constvars) and the residual
    values, each named as the jaxpr text names its constvar."""
    closed = lin.closed()
    # Each residual printed once per content (the bench's 36-layer MLP: 576 residuals, 435
    # contents; ~0.2 ms each): the text is a function of dtype, shape and bytes.
    view = jaxpr_view(closed, functools.partial(_const_preview, lin.shown.previews))
    # The view printed each residual already (longer): the step cards' previews are its prefix.
    for r, c in zip(lin.residuals, view.constvars, strict=True):
        lin.shown.seed(r, c.value_preview)
    return LinearJaxprRecord(
        jaxpr=view,
        residuals=[
            lin.shown.view(r, "residual", c.var.name)
            for r, c in zip(lin.residuals, view.constvars, strict=True)
        ],
    )
