"""Forward-mode autodiff one primal eqn at a time: JAX's JVP rules run on the user's jaxpr.

What JAX does in ``jax.jvp(f, primals, tangents)`` (``jax._src.interpreters.ad.jvp``): it wraps
each primal in an ``ad.JVPTracer`` (``.primal``, ``.tangent``; a symbolic-zero tangent
``ad.Zero(aval)`` is not wrapped at all, see ``ad.maybe_jvp_tracer``) and runs ``f``; each
primitive bound on such tracers lands in ``ad.JVPTrace.process_primitive``, which

* binds the primal eqn alone when every tangent in is a symbolic zero (no rule runs);
* otherwise looks the rule up in ``ad.primitive_jvps[primitive]`` and calls
  ``rule(primals_in, tangents_in, **params) -> (primals_out, tangents_out)`` on the parent trace,
  which records the eqns the rule emits;

``custom_jvp_call``/``custom_vjp_call`` eqns go to ``JVPTrace.process_custom_jvp_call`` /
``process_custom_vjp_call`` instead (the function's own rule runs).

How we capture it (:func:`capture_jvp`): we interpret the user's closed primal jaxpr eqn by eqn
(``jaxscope.internals.interpret``, with :class:`_Recorder` as its hook), binding each eqn's
primitive as ``core.eval_jaxpr`` does (``get_bind_params``, under
``source_info_util.user_context(eqn.source_info.traceback)``, so the emitted eqns carry the user's
line), inside ``jax.jvp``, inside ``jax.make_jaxpr``. Around each bind we read the ``JVPTracer``'s
``.primal``/``.tangent`` of the inputs and outputs (tracers of the outer ``make_jaxpr`` trace), and
we count the eqns the outermost ``pe.JaxprStackFrame`` gains (``add_eqn``, patched for the
duration): those are the eqns that primal eqn's rule emitted. The outer function also returns every
primal/tangent tracer it read (each once), so evaluating that jaxpr eagerly (``core.jaxpr_as_fun``:
each eqn bound as ``core.eval_jaxpr`` does, each primitive's executable cached by JAX, no
whole-program compile per run) gives all their values.

The whole JVP jaxpr is JAX's own: ``jax.make_jaxpr(lambda primals, tangents: jax.jvp(f_closed,
primals, tangents))(primals, tangents)`` where ``f_closed(*dynamic_args)`` calls the user's ``f``
with the static positional arguments put back at ``static_argnums`` and the keyword arguments
(static and dynamic) closed over: only the dynamic positional arguments are differentiated.
When the interpretation's jaxpr (its extra outputs dropped) prints exactly as JAX's JVP jaxpr,
the per-eqn counts attribute every JVP eqn to the primal eqn that produced it (``attributed``).

Tangent direction (docs/design/0006-jvp-exhibit.md): a snippet may define ``tangents`` with the
same pytree structure as the dynamic positional arguments; otherwise each floating (or complex)
leaf gets ones (a Python float gets ``1.0``), and each integer/bool leaf gets the ``float0`` zero
tangent JAX requires for it (a symbolic zero inside ``jax.jvp``).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core, source_info_util
from jax._src.interpreters import ad

from jaxscope.internals.ad_rules import jvp_rule_view
from jaxscope.internals.calling import CallPlan, concrete_args
from jaxscope.internals.interpret import Env, interpret
from jaxscope.internals.previews import Previews, min_preview_chars
from jaxscope.internals.recording import CountingHook, counting_outer_eqns
from jaxscope.internals.views import (
    PREVIEW_CHARS,
    aval_view,
    eqn_text,
    jaxpr_view,
    preview_value,
    print_with_context,
    printed_alike,
    snippet_source,
    var_name,
)
from jaxscope.protocol import (
    ArrayPreview,
    JaxprView,
    PendingPreview,
    RuleView,
    SourceLoc,
    ValueRole,
    ValueView,
)

source_info_util.register_exclusion(__file__)

# Longest preview of one value in a step (characters): a step shows several values.
STEP_PREVIEW_CHARS = 600
# Values larger than this (elements) are not fetched for the steps (the preview says so).
MAX_VALUE_ELEMENTS = 1 << 20
# At most this many steps are reported (one event each).
MAX_STEPS = 2000

# What JAX did with a primal eqn under JVPTrace (``JvpStepRecord.mechanism``; the jvp exhibit's
# events hold the same literals, a contract test compares them).
JvpMechanism = Literal["rule", "zero_tangents", "custom_jvp", "custom_vjp"]


@dataclass(frozen=True)
class JvpStepRecord:
    """One primal eqn through ``ad.JVPTrace`` (design 0059: the jvp probe makes its
    ``jvp_rule_applied`` event of it, field by field): the rule, the primal and tangent values
    in and out, and the eqns of the JVP jaxpr the step emitted (``tangent_eqns``, their
    indices when the attribution is exact)."""

    index: int
    primitive: str
    source: SourceLoc | None
    rule: RuleView | None
    mechanism: JvpMechanism
    note: str | None
    primals_in: list[ValueView]
    tangents_in: list[ValueView]
    tangent_eqns: list[str]
    jvp_eqn_indices: list[int]
    primals_out: list[ValueView]
    tangents_out: list[ValueView]


@dataclass(frozen=True)
class JvpJaxprRecord:
    """JAX's whole JVP jaxpr, which primal eqn each of its eqns came from, and its outputs
    against ``jax.jvp``'s (the jvp probe's ``jvp_jaxpr_staged`` event, field by field)."""

    jaxpr: JaxprView
    expression: str
    eqn_origin: list[int | None]
    attributed: bool
    tangents_in: list[ArrayPreview]
    primals_out: list[ArrayPreview]
    tangents_out: list[ArrayPreview]
    jax_primals_out: list[ArrayPreview]
    jax_tangents_out: list[ArrayPreview]
    matches_jax_jvp: bool
    max_abs_diff: float | None
    steps_left_out: int


# The exact expression of the JVP jaxpr shown (f_closed: see the module docstring).
JVP_EXPRESSION = (
    "jax.make_jaxpr(lambda primals, tangents: jax.jvp(f_closed, primals, tangents))"
    "(primals, tangents)"
)

INNER_NOTE = (
    "This eqn holds an inner jaxpr: it is one step with its own JVP rule, which differentiates "
    "the inner jaxpr as a whole (the eqns it emitted are shown, not a step per inner eqn)."
)
ZERO_NOTE = (
    "Every tangent going in is a symbolic zero (ad.Zero), so JVPTrace.process_primitive binds the "
    "primal eqn alone and no JVP rule runs: the tangent out is a symbolic zero too."
)


# ---------------------------------------------------------------------------- tangents


def _default_tangent(x: Any) -> Any:
    """Ones for a floating/complex leaf, the ``float0`` zero for an integer/bool/PRNG-key leaf."""
    if isinstance(x, bool):
        return np.zeros((), jax.dtypes.float0)
    if isinstance(x, (float, complex)):
        return type(x)(1)
    if isinstance(x, int):
        return np.zeros((), jax.dtypes.float0)
    shape = tuple(x.shape)
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        # A typed PRNG key array: its tangent dtype is float0, as for ints
        # (core.primal_dtype_to_tangent_dtype).
        return np.zeros(shape, jax.dtypes.float0)
    dtype = np.dtype(x.dtype)
    if jnp.issubdtype(dtype, np.inexact):
        return np.ones(shape, dtype)
    return np.zeros(shape, jax.dtypes.float0)


def choose_tangents(primals: tuple[Any, ...], given: Any = None) -> tuple[Any, ...]:
    """The tangents of ``primals`` (a tuple of pytrees): ``given`` (a snippet's ``tangents``,
    which must have the same pytree structure) or the default direction (module docstring).
    Raises ``TypeError`` when ``given`` does not match the primals' structure."""
    if given is None:
        return tuple(jax.tree.map(_default_tangent, primals))
    if isinstance(given, tuple):
        tangents: tuple[Any, ...] = given
    elif isinstance(given, list):
        tangents = tuple(given)
    else:
        tangents = (given,)
    # ``object``: jaxlib has no stub for its PyTreeDef (a C++ type), so mypy cannot resolve the
    # name JAX annotates with; they are only compared and printed here.
    want: object = jax.tree.structure(primals)
    got: object = jax.tree.structure(tangents)
    if want != got:
        raise TypeError(
            "the snippet's `tangents` must have the same pytree structure as the differentiated "
            f"(dynamic positional) arguments: expected {want}, got {got}"
        )
    return tangents


def closed_function(plan: CallPlan) -> Callable[..., Any]:
    """``f_closed(*dynamic_args)``: ``f`` with the static positional arguments put back at
    ``static_argnums`` and all keyword arguments closed over (the dynamic ones as constants)."""
    static = set(plan.normalized_argnums())
    args = plan.args
    kwargs = dict(concrete_kwargs(plan))

    def f_closed(*dynamic: Any) -> Any:
        it = iter(dynamic)
        full = [args[i] if i in static else next(it) for i in range(len(args))]
        return plan.fun(*full, **kwargs)

    functools.update_wrapper(f_closed, plan.f)
    return f_closed


def concrete_kwargs(plan: CallPlan) -> dict[str, Any]:
    """The dynamic keyword arguments with ``ShapeDtypeStruct`` leaves made zeros."""
    return dict(jax.tree.map(lambda x: concrete_args((x,))[0], plan.kwargs))


# ---------------------------------------------------------------------------- capture


@dataclass(slots=True)
class _Slot:
    """One value read around a bind: concrete (``value``), traced (``traced`` indexes the outer
    function's extra outputs), or a symbolic zero (``zero_aval``)."""

    aval: Any
    value: Any = None
    traced: int | None = None
    zero: bool = False


@dataclass
class _Step:
    index: int
    eqn: Any
    mechanism: JvpMechanism
    primals_in: list[_Slot]
    tangents_in: list[_Slot]
    primals_out: list[_Slot] = field(default_factory=list)
    tangents_out: list[_Slot] = field(default_factory=list)


@dataclass
class JvpCapture:
    """What :func:`capture_jvp` returns: the steps' records (the probe's events) and the jaxprs.
    ``staged``, the JVP jaxpr with the outputs checked against ``jax.jvp`` (the verdict), is
    made on first use: a page's capture emits the steps first (their values not evaluated:
    ``evaluated.computed`` false until a step is serialised whole), then this (design 0068)."""

    steps: list[JvpStepRecord]
    make_staged: Callable[[], JvpJaxprRecord] = field(repr=False)
    jvp_jaxpr: Any
    interpreted_jaxpr: Any
    truncated: int = 0
    evaluated: _Values | None = field(default=None, repr=False)

    @functools.cached_property
    def staged(self) -> JvpJaxprRecord:
        return self.make_staged()


def _mechanism(eqn: Any, tangents_in: list[Any]) -> JvpMechanism:
    name = eqn.primitive.name
    if all(type(t) is ad.Zero for t in tangents_in):
        return "zero_tangents"
    if name == "custom_jvp_call":
        return "custom_jvp"
    if name == "custom_vjp_call":
        return "custom_vjp"
    return "rule"


class _Recorder(CountingHook):
    """The primal jaxpr's walk under ``jax.jvp``: each eqn bound as ``core.eval_jaxpr`` binds it
    (``current[0]`` naming it meanwhile, for ``counting_outer_eqns``), the primal/tangent values
    of its inputs and outputs recorded as a :class:`_Step`."""

    def __init__(self, steps: list[_Step], traced: list[Any], current: list[int | None]) -> None:
        self.steps = steps
        self.traced = traced
        super().__init__(current)
        self.seen: dict[int, int] = {}  # id(tracer) -> its index in ``traced`` (read once)
        self.step: _Step | None = None

    def slot(self, x: Any, zero_aval: Any = None) -> _Slot:
        if zero_aval is not None:
            return _Slot(aval=zero_aval, zero=True)
        if isinstance(x, core.Tracer):
            aval = x.aval  # what ``core.typeof`` returns for a tracer
            k = self.seen.get(id(x))
            if k is None:  # ``traced`` keeps the tracer alive, so its id stays its own
                k = self.seen[id(x)] = len(self.traced)
                self.traced.append(x)
            return _Slot(aval=aval, traced=k)
        return _Slot(aval=core.typeof(x), value=x)

    def split(self, x: Any) -> tuple[_Slot, _Slot, Any]:
        if isinstance(x, ad.JVPTracer):
            p, t = x.primal, x.tangent
        else:
            p, t = x, ad.Zero(core.typeof(x).to_tangent_aval())
        pslot = self.slot(p)
        tslot = self.slot(None, zero_aval=t.aval) if type(t) is ad.Zero else self.slot(t)
        return pslot, tslot, t

    def before(self, index: int, eqn: Any, invals: list[Any], env: Env) -> bool:
        pairs = [self.split(x) for x in invals]
        self.step = _Step(
            index=index,
            eqn=eqn,
            mechanism=_mechanism(eqn, [t for _, _, t in pairs]),
            primals_in=[p for p, _, _ in pairs],
            tangents_in=[t for _, t, _ in pairs],
        )
        return False

    def after(self, index: int, eqn: Any, invals: list[Any], outvals: list[Any], env: Env) -> bool:
        step = self.step
        assert step is not None
        for o in outvals:
            p, t, _ = self.split(o)
            step.primals_out.append(p)
            step.tangents_out.append(t)
        self.steps.append(step)
        return False


def _interpreter(
    primal: Any,
    kw_leaves: list[Any],
    steps: list[_Step],
    traced: list[Any],
    current: list[int | None],
) -> Callable[..., list[Any]]:
    """The function ``jax.jvp`` runs: the closed primal jaxpr, eqn by eqn (:func:`interpret`),
    recording primal/tangent values around each bind (:class:`_Recorder`)."""
    recorder = _Recorder(steps, traced, current)

    def interp(*dynamic_leaves: Any) -> list[Any]:
        args = [*dynamic_leaves, *kw_leaves]
        out = interpret(primal.jaxpr, primal.consts, args, recorder).outvals
        assert out is not None  # the recorder never stops the walk
        return out

    return interp


def _custom_rule_view(eqn: Any) -> RuleView:
    """The custom rule a ``custom_jvp_call``/``custom_vjp_call`` eqn carries: the function's
    name and file:line from its ``call_jaxpr``'s ``debug_info.func_src_info``."""
    kind = "custom_jvp" if eqn.primitive.name == "custom_jvp_call" else "custom_vjp"
    info = getattr(eqn.params.get("call_jaxpr"), "jaxpr", None)
    src = getattr(getattr(info, "debug_info", None), "func_src_info", None) or ""
    m = re.match(r"(.+?) at (.+):(\d+)$", src)
    method = f"JVPTrace.process_{kind}_call"
    if m is None:
        return RuleView(table=kind, name=f"{src or 'custom rule'} ({method})")
    path = m.group(2)
    path = path.split("site-packages/", 1)[1] if "site-packages/" in path else path
    return RuleView(
        table=kind, name=f"{m.group(1)}'s {kind} rule ({method})", file=path, line=int(m.group(3))
    )


class _Shown:
    """Preview text (or a preview printed when asked: ``jaxscope.internals.previews``) and
    non-finiteness of each value shown, computed once per value: a value read by several steps
    (an eqn's output is its consumers' input) is printed once. Values are copied to the host only
    here, when shown. ``values()`` gives the traced values (:class:`_Values`); with ``lazy``
    (a page's capture, design 0068) a traced value's preview and non-finiteness are a costly
    ``PendingPreview``: nothing is evaluated until a step is serialised whole."""

    def __init__(
        self, values: Callable[[], list[Any]], printer: Previews, lazy: bool = False
    ) -> None:
        self.values = values
        self.printer = printer
        self.lazy = lazy
        self.traced: dict[int, tuple[str | PendingPreview | None, bool]] = {}
        # a pending preview's least length, by aval (``min_preview_chars``)
        self.least: dict[int, tuple[Any, int]] = {}
        # ``_value_view``'s views of traced values, by (index, role, var name)
        self.views: dict[tuple[int, str, str | None], ValueView] = {}
        self.concrete: dict[int, tuple[Any, str | PendingPreview | None, bool]] = {}

    def get(self, s: _Slot) -> tuple[str | PendingPreview | None, bool]:
        if s.traced is not None:
            got = self.traced.get(s.traced)
            if got is None:
                if self.lazy:
                    got = self.traced[s.traced] = self._later(s.traced, s.aval)
                else:
                    got = self.traced[s.traced] = self._show(self.values()[s.traced])
            return got
        hit = self.concrete.get(id(s.value))
        if hit is None or hit[0] is not s.value:
            hit = self.concrete[id(s.value)] = (s.value, *self._show(s.value))
        return hit[1], hit[2]

    def _later(self, k: int, aval: Any) -> tuple[PendingPreview | None, bool]:
        """Traced value ``k``'s preview and non-finiteness, computed when first serialised (the
        text :meth:`_show` gives an eager capture, through the same memo)."""
        if not _fetchable_aval(aval):
            return None, False
        hit = self.least.get(id(aval))
        if hit is None or hit[0] is not aval:  # once per aval (JAX interns them)
            shape = tuple(getattr(aval, "shape", ()))
            kind = np.dtype(aval.dtype).kind if _numpy_dtype(aval) else ""
            least = min_preview_chars(shape, kind, STEP_PREVIEW_CHARS) if kind in "biufc" else 0
            hit = self.least[id(aval)] = (aval, least if shape else 1)
        shown: list[tuple[str | None, bool]] = []

        def now() -> tuple[str | None, bool]:
            if not shown:
                shown.append(self._show_now(self.values()[k]))
            return shown[0]

        pending = PendingPreview(
            lambda: now()[0] or "", hit[1], costly=True, nonfinite=lambda: now()[1]
        )
        return pending, False

    def _show_now(self, value: Any) -> tuple[str | None, bool]:
        if value is None:
            return None, False
        try:
            arr = np.asarray(value)
        except TypeError:
            return preview_value(value, STEP_PREVIEW_CHARS), False
        nonfinite = arr.dtype.kind in "fc" and not bool(np.all(np.isfinite(arr)))
        return self.printer.text(arr, STEP_PREVIEW_CHARS), nonfinite

    def _show(self, value: Any) -> tuple[str | PendingPreview | None, bool]:
        if value is None:
            return None, False
        try:
            arr = np.asarray(value)
        except TypeError:  # a PRNG key array: no numpy view; preview_value shows JAX's repr
            return preview_value(value, STEP_PREVIEW_CHARS), False
        nonfinite = arr.dtype.kind in "fc" and not bool(np.all(np.isfinite(arr)))
        return self.printer.preview(arr, STEP_PREVIEW_CHARS), nonfinite


def _value_view(
    s: _Slot, role: ValueRole, shown: _Shown, names: dict[int, str], var: str | None = None
) -> ValueView:
    if s.zero:
        return ValueView(role="tangent", aval=aval_view(s.aval), zero=True, var=var)
    if s.traced is not None:
        var = names.get(s.traced, var)
        # A traced value is read by several steps (an eqn's output is its consumers' input):
        # one view per role and name, shared by those steps' events (never changed once made:
        # a summary copies what it changes).
        key = (s.traced, role, var)
        hit = shown.views.get(key)
        if hit is None:
            hit = shown.views[key] = _new_value_view(s, role, shown, var)
        return hit
    return _new_value_view(s, role, shown, var)


def _new_value_view(s: _Slot, role: ValueRole, shown: _Shown, var: str | None) -> ValueView:
    preview, nonfinite = shown.get(s)
    view = ValueView(
        role=role,
        aval=aval_view(s.aval),
        preview=preview if not isinstance(preview, PendingPreview) else None,
        var=var,
        nonfinite=nonfinite,
    )
    return view.with_pending(preview) if isinstance(preview, PendingPreview) else view


def _dtype_name(arr: np.ndarray) -> str:
    """The dtype JAX computes with (``float64`` -> ``float32`` unless x64 is on)."""
    if arr.dtype == jax.dtypes.float0:
        return "float0"
    return str(jax.dtypes.canonicalize_dtype(arr.dtype))


def _previews(prefix: str, leaves: list[Any], printer: Previews) -> list[ArrayPreview]:
    out = []
    for i, leaf in enumerate(leaves):
        arr = np.asarray(leaf)
        out.append(
            ArrayPreview(
                path=f"{prefix}[{i}]",
                shape=list(arr.shape),
                dtype=_dtype_name(arr),
                preview=printer.text(arr, PREVIEW_CHARS),
            )
        )
    return out


def _path_previews(tree: Any, printer: Previews) -> list[ArrayPreview]:
    out = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        arr = np.asarray(leaf)
        out.append(
            ArrayPreview(
                path="tangents" + jax.tree_util.keystr(path),
                shape=list(arr.shape),
                dtype=_dtype_name(arr),
                preview=printer.text(arr, PREVIEW_CHARS),
            )
        )
    return out


def _max_abs_diff(a: list[Any], b: list[Any]) -> float:
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        x_arr, y_arr = np.asarray(x), np.asarray(y)
        if x_arr.dtype == jax.dtypes.float0 or x_arr.size == 0:
            continue
        d = np.abs(x_arr.astype(np.float64) - y_arr.astype(np.float64))
        if d.size:
            m = float(np.nanmax(d)) if not np.all(np.isnan(d)) else 0.0
            worst = max(worst, m)
    return worst


def _close(a: list[Any], b: list[Any]) -> bool:
    for x, y in zip(a, b, strict=True):
        x_arr, y_arr = np.asarray(x), np.asarray(y)
        if x_arr.dtype == jax.dtypes.float0:
            continue
        if x_arr.shape != y_arr.shape:
            return False
        if not np.allclose(x_arr, y_arr, rtol=1e-5, atol=1e-6, equal_nan=True):
            return False
    return True


def _same_consts(a: list[Any], b: list[Any]) -> bool:
    """Same number of constants, each the same object or equal arrays of one dtype and shape."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x is y:
            continue
        try:
            x_arr, y_arr = np.asarray(x), np.asarray(y)
            same = x_arr.dtype == y_arr.dtype and np.array_equal(x_arr, y_arr, equal_nan=True)
        except (TypeError, ValueError):  # e.g. PRNG key arrays: not compared, not the same
            same = False
        if not same:
            return False
    return True


def _atoms_of(tracers: list[Any], jaxpr: core.Jaxpr) -> list[Any] | None:
    """Each tracer's atom in ``jaxpr`` (the jaxpr ``make_jaxpr`` traced them into): its
    ``val``, a var bound there or a literal; None when one is not (then they are not its)."""
    bound: set[Any] = {*jaxpr.constvars, *jaxpr.invars}
    for e in jaxpr.eqns:
        bound.update(e.outvars)
    atoms = [getattr(x, "val", None) for x in tracers]
    if all(isinstance(a, core.Literal) or (isinstance(a, core.Var) and a in bound) for a in atoms):
        return atoms
    return None


def _fetchable(x: Any) -> bool:
    return _fetchable_aval(core.typeof(x))


def _fetchable_aval(aval: Any) -> bool:
    # ``math.prod`` of the shape's ints (``np.prod`` cost ~15 us a call: 8,700 calls a capture
    # of the bench's 976-eqn MLP).
    return int(math.prod(getattr(aval, "shape", ()))) <= MAX_VALUE_ELEMENTS


def _numpy_dtype(aval: Any) -> bool:
    try:
        np.dtype(aval.dtype)
    except TypeError:  # an extended dtype (a PRNG key's): no numpy kind
        return False
    return True


class _Values:
    """The interpretation's jaxpr evaluated on the inputs, once, when first asked (the outputs,
    then one value per traced value, ``None`` where not fetched)."""

    def __init__(self, extended: Any, flat_in: list[Any], n: int, fetch: list[bool]) -> None:
        self.extended, self.flat_in, self.n = extended, flat_in, n
        self.fetch = fetch  # per traced value: whether it is an output (``_fetchable``)
        self._results: list[Any] | None = None
        self._values: list[Any] = []

    @property
    def computed(self) -> bool:
        return self._results is not None

    def results(self) -> list[Any]:
        if self._results is None:
            self._results = list(core.jaxpr_as_fun(self.extended)(*self.flat_in))
            it = iter(self._results[self.n :])
            self._values = [next(it) if ok else None for ok in self.fetch]
        return self._results

    def values(self) -> list[Any]:
        self.results()
        return self._values


def capture_jvp(
    plan: CallPlan, primal: Any, given_tangents: Any = None, previews_on_demand: bool = False
) -> JvpCapture:
    """Interpret ``primal`` (the ClosedJaxpr of ``plan.make_jaxpr()``) under ``jax.jvp`` eqn by
    eqn, and stage JAX's own JVP jaxpr of ``f_closed``; see the module docstring.
    ``previews_on_demand``: the steps' value previews are printed when each event is serialised
    (a page's run: ``jaxscope.internals.previews``), not now; the events serialise the same.

    Raises what JAX raises (``NotImplementedError`` for a primitive without a JVP rule,
    ``TypeError`` for tangents that do not match) and ``TypeError`` for a bad ``tangents``.
    """
    dynamic = concrete_args(plan.dynamic_args())
    tangents = choose_tangents(dynamic, given_tangents)
    f_closed = closed_function(plan)
    dyn_leaves = jax.tree.leaves(dynamic)
    tan_leaves = jax.tree.leaves(tangents)
    kw_leaves = jax.tree.leaves(concrete_kwargs(plan))

    # JAX's own JVP jaxpr, exactly.
    jvp_closed = jax.make_jaxpr(lambda primals, tangents: jax.jvp(f_closed, primals, tangents))(
        dynamic, tangents
    )

    # The interpretation, eqn by eqn, with every primal/tangent it read as extra outputs.
    steps: list[_Step] = []
    traced: list[Any] = []
    origin: list[int | None] = []
    current: list[int | None] = [None]
    interp = _interpreter(primal, kw_leaves, steps, traced, current)

    def outer(p: list[Any], t: list[Any]) -> Any:
        primals_out, tangents_out = jax.jvp(interp, tuple(p), tuple(t))
        return list(primals_out), list(tangents_out)

    with counting_outer_eqns(origin, current):
        trimmed = jax.make_jaxpr(outer)(dyn_leaves, tan_leaves)
    jaxpr = trimmed.jaxpr
    n = len(jaxpr.outvars)
    # Every primal/tangent value read is an extra output of ``extended``, the jaxpr evaluated
    # for the values: a traced value's atom is its tracer's ``val`` (``to_jaxpr`` makes a
    # returned tracer's ``val`` the outvar; ``traced`` kept each tracer, hence its eqn, alive).
    fetch = [_fetchable(x) for x in traced]
    extra_vars = _atoms_of([x for x, ok in zip(traced, fetch, strict=True) if ok], jaxpr)
    if extra_vars is None:  # not this trace's atoms: trace again, returning them as outputs
        n_out: list[int] = []
        steps.clear()
        traced.clear()
        origin.clear()
        interp = _interpreter(primal, kw_leaves, steps, traced, current)

        def outer_fetched(p: list[Any], t: list[Any]) -> Any:
            primals_out, tangents_out = jax.jvp(interp, tuple(p), tuple(t))
            n_out.append(len(primals_out) + len(tangents_out))
            fetch[:] = [_fetchable(x) for x in traced]
            fetched = [x if ok else None for x, ok in zip(traced, fetch, strict=True)]
            return (list(primals_out), list(tangents_out)), fetched

        with counting_outer_eqns(origin, current):
            extended = jax.make_jaxpr(outer_fetched)(dyn_leaves, tan_leaves)
        n = n_out[0]
        jaxpr = extended.jaxpr
        trimmed = core.ClosedJaxpr(jaxpr.replace(outvars=jaxpr.outvars[:n]), extended.consts)
        extra_vars = list(jaxpr.outvars[n:])
    else:
        extended = core.ClosedJaxpr(
            jaxpr.replace(outvars=[*jaxpr.outvars, *extra_vars]), trimmed.consts
        )
    # ``str(closed) == str(closed.jaxpr)``: JAX's JVP jaxpr is printed once here; its view (one
    # ``EqnView`` per eqn, for the verdict's event) reuses that printout and its eqn texts.
    jvp_text, jvp_ctx = print_with_context(jvp_closed.jaxpr)
    # Does the interpretation print as JAX's JVP jaxpr? ``printed_alike`` tells from the two
    # jaxprs' structure, without printing the interpretation (each of its vars named as its image
    # in JAX's printout); where it cannot tell, the interpretation is printed and compared.
    alike = printed_alike(trimmed.jaxpr, jvp_closed.jaxpr)
    if alike is not None:
        same_text = True

        def jvp_name(var: Any) -> str:
            return var_name(alike[var], jvp_ctx)

    else:
        trimmed_text, pp_ctx = print_with_context(trimmed.jaxpr)
        same_text = trimmed_text == jvp_text

        def jvp_name(var: Any) -> str:
            return str(core.pp_var(var, pp_ctx))

    attributed = same_text and len(origin) == len(jaxpr.eqns)

    # Values: the interpretation's jaxpr (same eqns as JAX's JVP jaxpr) evaluated eagerly on the
    # inputs, eqn by eqn as ``core.eval_jaxpr`` binds them (as eager ``jax.jvp`` runs them: each
    # primitive's executable is compiled once and cached by JAX; one ``jax.jit`` of the whole
    # jaxpr would be compiled afresh for every run). Host copies are made only when shown.
    # A page's capture (design 0068) evaluates it only when a step is serialised whole or the
    # outputs are checked (``JvpCapture.staged``, after the steps are streamed).
    flat_in = [*dyn_leaves, *tan_leaves]
    evaluated = _Values(extended, flat_in, n, fetch)
    if not previews_on_demand:
        evaluated.results()

    # Names of the traced values in the JVP jaxpr's text (when it appears there).
    appearing: set[Any] = set(trimmed.jaxpr.invars) | set(trimmed.jaxpr.constvars)
    for e in trimmed.jaxpr.eqns:
        appearing.update(v for v in e.invars if isinstance(v, core.Var))
    appearing.update(v for v in trimmed.jaxpr.outvars if isinstance(v, core.Var))
    names: dict[int, str] = {}
    fetch_index = [i for i, ok in enumerate(fetch) if ok]
    for var, i in zip(extra_vars, fetch_index, strict=True):
        if isinstance(var, core.Var) and var in appearing:
            names[i] = jvp_name(var)

    # Each step's tangent eqns as a view prints them (``EqnView.text``): the interpretation's,
    # each with its printing's names; when it prints as JAX's JVP jaxpr, JAX's eqns print the
    # same, and their texts are what the JVP jaxpr's view (the verdict's) shows.
    if same_text:
        eqn_texts = [eqn_text(e, jvp_ctx) for e in jvp_closed.jaxpr.eqns]
    else:
        eqn_texts = [eqn_text(e, pp_ctx) for e in trimmed.jaxpr.eqns]
    eqn_origin: list[int | None] = (
        list(origin) if attributed else [None] * len(jvp_closed.jaxpr.eqns)
    )
    emitted: dict[int, list[int]] = {}
    for k, o in enumerate(origin):
        if o is not None:
            emitted.setdefault(o, []).append(k)

    _, primal_ctx = print_with_context(primal.jaxpr)
    printer = Previews(on_demand=previews_on_demand)
    shown = _Shown(evaluated.values, printer, lazy=previews_on_demand)
    rules: dict[Any, RuleView | None] = {}  # one lookup per primitive (the tables are fixed here)
    events: list[JvpStepRecord] = []
    for step in steps[:MAX_STEPS]:
        eqn = step.eqn
        # the primal jaxpr's names, as its view (the probe's first event) gave them
        in_names = [
            None if isinstance(v, core.Literal) else var_name(v, primal_ctx) for v in eqn.invars
        ]
        out_names = [var_name(v, primal_ctx) for v in eqn.outvars]
        if step.mechanism == "rule":
            if eqn.primitive not in rules:
                rules[eqn.primitive] = jvp_rule_view(eqn.primitive)
            rule = rules[eqn.primitive]
        elif step.mechanism in ("custom_jvp", "custom_vjp"):
            rule = _custom_rule_view(eqn)
        else:
            rule = None
        has_inner = any(
            isinstance(v, (core.Jaxpr, core.ClosedJaxpr))
            for val in eqn.params.values()
            for v in (val if isinstance(val, tuple) else (val,))
        )
        note = ZERO_NOTE if step.mechanism == "zero_tangents" else INNER_NOTE if has_inner else None
        indices = emitted.get(step.index, [])
        events.append(
            JvpStepRecord(
                index=step.index,
                primitive=eqn.primitive.name,
                source=snippet_source(eqn.source_info.traceback),
                rule=rule,
                mechanism=step.mechanism,
                note=note,
                primals_in=[
                    _value_view(s, "literal" if nm is None else "primal", shown, {}, nm)
                    for s, nm in zip(step.primals_in, in_names, strict=True)
                ],
                tangents_in=[_value_view(s, "tangent", shown, names) for s in step.tangents_in],
                tangent_eqns=[eqn_texts[k] for k in indices],
                jvp_eqn_indices=indices if attributed else [],
                primals_out=[
                    _value_view(s, "primal", shown, {}, nm)
                    for s, nm in zip(step.primals_out, out_names, strict=True)
                ],
                tangents_out=[_value_view(s, "tangent", shown, names) for s in step.tangents_out],
            )
        )

    def verdict() -> JvpJaxprRecord:
        # The outputs: JAX's JVP jaxpr evaluated (eagerly, as above) beside jax.jvp itself
        # (eager). When the interpretation prints as JAX's JVP jaxpr and holds the same
        # constants, it is the same computation on the same inputs: its outputs are those of
        # JAX's JVP jaxpr.
        if attributed and _same_consts(trimmed.consts, jvp_closed.consts):
            out_leaves = [np.asarray(x) for x in evaluated.results()[:n]]
        else:
            out_leaves = [np.asarray(x) for x in core.jaxpr_as_fun(jvp_closed)(*flat_in)]
        n_primal_out = len(jax.tree.leaves(primal.out_avals))
        if n_primal_out * 2 != len(out_leaves):
            n_primal_out = len(out_leaves) // 2
        ref_p, ref_t = jax.jvp(f_closed, dynamic, tangents)
        ref = [np.asarray(x) for x in [*jax.tree.leaves(ref_p), *jax.tree.leaves(ref_t)]]
        same = len(ref) == len(out_leaves)
        return JvpJaxprRecord(
            jaxpr=jaxpr_view(jvp_closed),
            expression=JVP_EXPRESSION,
            eqn_origin=eqn_origin,
            attributed=attributed,
            tangents_in=_path_previews(tangents, printer),
            primals_out=_previews("primals_out", out_leaves[:n_primal_out], printer),
            tangents_out=_previews("tangents_out", out_leaves[n_primal_out:], printer),
            jax_primals_out=_previews("primals_out", ref[:n_primal_out], printer),
            jax_tangents_out=_previews("tangents_out", ref[n_primal_out:], printer),
            matches_jax_jvp=same and _close(out_leaves, ref),
            max_abs_diff=_max_abs_diff(out_leaves, ref) if same else None,
            steps_left_out=max(0, len(steps) - MAX_STEPS),
        )

    capture = JvpCapture(
        steps=events,
        make_staged=verdict,
        jvp_jaxpr=jvp_closed,
        interpreted_jaxpr=trimmed,
        truncated=max(0, len(steps) - MAX_STEPS),
        evaluated=evaluated,
    )
    if not previews_on_demand:
        capture.staged  # noqa: B018 - an eager capture checks the outputs now, as before
    return capture
