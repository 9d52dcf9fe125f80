"""Watch each call of a jitted function and read, from JAX's own caches and counters, which
cache layer answered it (the ``caches`` exhibit).

The layers a ``jax.jit`` call walks through (JAX 0.10.2):

* ``cpp``: the C++ fast path of the jitted object (``jaxlib`` ``PjitFunction``); its size is
  ``jitted._cache_size()``. A hit runs no Python of JAX at all, so no counter below moves.
* ``jaxpr``: ``pjit._infer_params_cached`` (``weakref_lru_cache``: the traced jaxpr and the
  call's parameters, keyed by the function, jit info, argument signature, avals and context),
  backed by ``pe.trace_to_jaxpr`` (whose misses produce the explain-cache-miss messages). A miss
  reports ``/jax/core/compile/jaxpr_trace_duration`` with ``fun_name`` through
  ``jax.monitoring``.
* ``lowering``: ``pjit._pjit_lower`` (``weakref_lru_cache`` keyed by the jaxpr, shardings,
  layouts...): a hit returns the ``MeshComputation`` whose ``.compile()`` is memoised.
  ``pxla._cached_lowering_to_hlo`` is read too (shown, not used for the verdict).
* ``executable``: ``pxla._cached_compilation`` (``weakref_lru_cache`` keyed by the lowered
  computation).
* ``persistent``: the on-disk cache (``jax._src.compilation_cache``), only in use when
  ``jax_compilation_cache_dir`` is set; it reports ``/jax/compilation_cache/cache_hits`` and
  ``cache_misses`` events.

Every ``weakref_lru_cache`` has ``cache_info()`` with ``hits``/``misses``; we snapshot them right
before and after the call. Internal jits (``jnp`` helpers' inner ``jit``s, and any jit ``f``
calls) move ``_infer_params_cached`` and ``trace_to_jaxpr`` too while ``f``'s body runs under the
trace: those lookups are filtered out. A profile hook (``sys.setprofile``) snapshots the counters
when ``f``'s code object starts and returns, and the counts moved in between are subtracted, so
the counters are the outer call's own lookups (keyed by ``f``). The verdict uses the trace event
of ``f`` (did JAX trace *this* function) and the filtered counters.

Also, re-exported from ``internals/jit_watch.py``: :func:`watching_jit_calls`, which, while a
driver ``f`` runs, turns every ``jax.jit`` object of the snippet it can reach (globals, dicts,
classes, closures; or made by ``jax.jit`` during the run) into an observing proxy, and counts
JAX's trace/compile events of the snippet's functions for the whole run.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import jax.monitoring
import numpy as np
from jax._src import config as jax_config
from jax._src import pjit, source_info_util
from jax._src import util as jax_util
from jax._src.interpreters import mlir, pxla
from jax._src.interpreters import partial_eval as pe

from jaxscope.internals.cache import EXPLAIN_LOGGER, _ListHandler, fresh_caches, tidy_explanation
from jaxscope.internals.jit_watch import (
    is_jitted as is_jitted,
)
from jaxscope.internals.jit_watch import (
    jitted_fun as jitted_fun,
)
from jaxscope.internals.jit_watch import (
    user_call_site as user_call_site,
)
from jaxscope.internals.jit_watch import (
    watching_jit_calls as watching_jit_calls,
)
from jaxscope.internals.monitoring import COMPILE_EVENT, LOWER_EVENT, TRACE_EVENT

source_info_util.register_exclusion(__file__)

# The cache layer that answered a call and each layer's state in it: the caches exhibit's
# events hold the same literals (``exhibits/caches/events.py``; a contract test compares them).
CacheLayer = Literal["cpp", "jaxpr", "lowering", "executable", "persistent", "compile"]
CacheCell = Literal["hit", "miss", "skipped", "off"]

PERSISTENT_HIT_EVENT = "/jax/compilation_cache/cache_hits"
PERSISTENT_MISS_EVENT = "/jax/compilation_cache/cache_misses"
# Recorded each time a compile asks the disk cache (compiler.compile_or_get_cached); JAX records
# ``cache_misses`` only when it then writes an entry, so a program it does not write (host
# callbacks, under the size/time thresholds) asks, misses, and reports no miss event.
PERSISTENT_REQUEST_EVENT = "/jax/compilation_cache/compile_requests_use_cache"

# name -> (cache object, where JAX defines it)
COUNTED_CACHES: dict[str, tuple[Any, str]] = {
    "infer_params": (pjit._infer_params_cached, "jax/_src/pjit.py _infer_params_cached"),
    "trace_to_jaxpr": (pe.trace_to_jaxpr, "jax/_src/interpreters/partial_eval.py trace_to_jaxpr"),
    "pjit_lower": (pjit._pjit_lower, "jax/_src/pjit.py _pjit_lower"),
    "lowering_to_hlo": (
        pxla._cached_lowering_to_hlo,
        "jax/_src/interpreters/pxla.py _cached_lowering_to_hlo",
    ),
    "compilation": (pxla._cached_compilation, "jax/_src/interpreters/pxla.py _cached_compilation"),
}

LAYERS = ("cpp", "jaxpr", "lowering", "executable", "persistent")


def counter_snapshot() -> dict[str, tuple[int, int]]:
    """``{name: (hits, misses)}`` of every cache in :data:`COUNTED_CACHES`."""
    out = {}
    for name, (cache, _) in COUNTED_CACHES.items():
        info = cache.cache_info()
        out[name] = (int(info.hits), int(info.misses))
    return out


def reset_caches() -> list[str]:
    """Start from a clean cache state: ``jax.clear_caches()`` (every Python-level cache in
    ``jax._src.util._caches`` and the C++ jit caches) and :func:`fresh_caches` (also the call
    sites ``pe.explain`` remembers). Returns what was cleared, in words."""
    jax.clear_caches()
    fresh_caches()
    return [
        "jax.clear_caches(): every cache in jax._src.util._caches and the C++ jit caches",
        "pjit._infer_params_cached, pe.trace_to_jaxpr",
        "pe.callsites_with_tracing_cache_miss (explain-cache-miss memory)",
    ]


def persistent_cache_enabled() -> bool:
    """Whether the on-disk compilation cache is configured (``jax_compilation_cache_dir``)."""
    return bool(jax_config.compilation_cache_dir.value)


def jitted_donates(jitted: Any) -> bool:
    """Whether the jit object donates any argument (``jitted._jit_info.donate_argnums``/
    ``donate_argnames``): a donated input array is deleted by the call."""
    info = jitted._jit_info
    return bool(info.donate_argnums) or bool(getattr(info, "donate_argnames", ()))


def jitted_name(jitted: Any) -> str:
    """The name JAX gives the jitted function (``util.fun_name``: ``__name__``, through
    ``functools.partial``): the ``fun_name`` of its ``jax.monitoring`` trace events."""
    return str(jax_util.fun_name(jitted_fun(jitted)))


def persistent_module_name(jitted: Any) -> str:
    """The module name JAX compiles a ``jax.jit`` call under, which starts its persistent cache
    key (``jit_f-<sha256>``): ``mlir.sanitize_name(util.wrap_name("jit", name)).rstrip("_")``
    (``mlir.lower_jaxpr_to_module``), e.g. ``jit__lambda`` for a lambda."""
    return str(mlir.sanitize_name(jax_util.wrap_name("jit", jitted_name(jitted))).rstrip("_"))


def jitted_statics(jitted: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``(static_argnums, static_argnames)`` from ``jitted._jit_info`` (``pjit.PjitInfo``)."""
    info = jitted._jit_info
    return tuple(info.static_argnums), tuple(info.static_argnames)


def trace_context_now() -> dict[str, str]:
    """The tracing context JAX puts in its jit cache keys (``config.trace_context()``, one value
    per ``config.trace_context_names()``), as ``{name: repr(value)}``."""
    names = jax_config.trace_context_names()
    values = jax_config.trace_context()
    return {str(n): repr(v) for n, v in zip(names, values, strict=False)}


def _short_aval(x: Any) -> str:
    aval = jax.typeof(x)
    text = str(aval.str_short(short_dtypes=True)) if hasattr(aval, "str_short") else str(aval)
    if getattr(aval, "weak_type", False):
        text += " weak"
    return text


def placement(x: Any) -> str:
    """Where an argument lives, as the C++ cache and the lowering key see it: a jax.Array
    committed to a device or not (``x.committed``, ``x.sharding``), a numpy array, a Python
    scalar."""
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        devices = ",".join(str(d) for d in x.sharding.device_set)
        how = "committed to" if x.committed else "uncommitted, on"
        return f"jax.Array {how} {devices}"
    if isinstance(x, np.ndarray):
        return "numpy.ndarray (host)"
    if isinstance(x, np.generic):
        return f"numpy scalar {type(x).__name__}"
    return f"Python {type(x).__name__}"


def static_text(value: Any) -> str:
    """A static argument as JAX keys it: its ``repr``; for an object whose class keeps
    ``object.__repr__`` (``<M object at 0x...>``, new for every instance), its class and
    ``hash`` instead, since JAX looks statics up by hash and equality (two equal instances
    are one cache entry)."""
    if type(value).__repr__ is object.__repr__:  # type: ignore[comparison-overlap]
        try:
            return f"{type(value).__name__} instance, hash {hash(value)}"
        except TypeError:
            return f"{type(value).__name__} instance (unhashable)"
    return repr(value)


def key_entries(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    static_argnums: tuple[int, ...],
    static_argnames: tuple[str, ...],
) -> list[tuple[str, str]]:
    """What JAX keys a jit call on, as ``(entry name, text)``: the input pytree (static
    arguments as ``static``), each dynamic leaf's aval (shape, dtype, ``weak``) and placement
    (committedness/sharding or host type), each static argument's value. Leaves are named by
    ``f``'s parameter names and ``jax.tree_util.keystr`` paths. The function's identity and the
    tracing context are added by the caller."""
    import inspect

    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    nargs = len(args)
    # As JAX's ``FlatTree.flatten_static_argnums``: only a negative index wraps; an index past
    # the positional args names an argument passed by keyword (``static_argnames`` covers it).
    statics = {i % nargs if i < 0 and nargs else i for i in static_argnums}
    entries: list[tuple[str, str]] = []
    dyn_args: list[Any] = []
    for i, a in enumerate(args):
        name = params[i] if i < len(params) else f"args[{i}]"
        if i in statics:
            entries.append((f"static {name}", static_text(a)))
            dyn_args.append("static")
            continue
        dyn_args.append(a)
    dyn_kwargs: dict[str, Any] = {}
    for k, v in sorted(kwargs.items()):
        if k in static_argnames:
            entries.append((f"static {k}", static_text(v)))
            dyn_kwargs[k] = "static"
        else:
            dyn_kwargs[k] = v
    tree = jax.tree.structure(
        (tuple(dyn_args), dyn_kwargs), is_leaf=lambda x: isinstance(x, str) and x == "static"
    )
    entries.insert(0, ("input pytree", str(tree).replace("PyTreeDef", "", 1)))
    for i, a in enumerate(args):
        if i in statics:
            continue
        name = params[i] if i < len(params) else f"args[{i}]"
        _leaf_entries(entries, name, a)
    for k, v in sorted(kwargs.items()):
        if k not in static_argnames:
            _leaf_entries(entries, k, v)
    return entries


def argument_trees(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    static_argnums: tuple[int, ...],
    static_argnames: tuple[str, ...],
) -> dict[str, Any]:
    """Each dynamic argument's pytree structure (``PyTreeDef``) by the name :func:`key_entries`
    gives it: what ``structure_change`` compares when the input pytree entry differs."""
    import inspect

    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    nargs = len(args)
    statics = {i % nargs if i < 0 and nargs else i for i in static_argnums}
    trees: dict[str, Any] = {}
    for i, a in enumerate(args):
        if i not in statics:
            trees[params[i] if i < len(params) else f"args[{i}]"] = jax.tree.structure(a)
    for k, v in sorted(kwargs.items()):
        if k not in static_argnames:
            trees[k] = jax.tree.structure(v)
    return trees


def _leaf_entries(entries: list[tuple[str, str]], name: str, value: Any) -> None:
    for path, leaf in jax.tree_util.tree_leaves_with_path(value):
        leaf_name = name + jax.tree_util.keystr(path)
        entries.append((f"{leaf_name} aval", _short_aval(leaf)))
        entries.append((f"{leaf_name} placement", placement(leaf)))


@dataclass
class JitCallRecord:
    """What one observed call did, read from JAX's caches and counters."""

    fun_name: str
    before: dict[str, tuple[int, int]]
    after: dict[str, tuple[int, int]]
    cpp_size_before: int
    cpp_size_after: int
    traced: bool
    trace_events: int
    compile_events: int
    timers_ms: dict[str, float]
    persistent_hits: int
    persistent_misses: int
    persistent_requests: int
    persistent_enabled: bool
    explanation: str
    messages: list[str] = field(default_factory=list)
    out: Any = None
    inner: dict[str, tuple[int, int]] = field(default_factory=dict)
    filtered: bool = False

    def delta(self, name: str) -> tuple[int, int]:
        """``(hits, misses)`` added to cache ``name`` by the call."""
        b, a = self.before[name], self.after[name]
        return a[0] - b[0], a[1] - b[1]

    def cells(self) -> dict[str, CacheCell]:
        """Per layer: ``hit``, ``miss``, ``skipped`` (not consulted) or ``off``."""
        ip_h, ip_m = self.delta("infer_params")
        python_entered = ip_h + ip_m > 0 or self.trace_events > 0
        cells: dict[str, CacheCell] = {}
        cells["cpp"] = "miss" if python_entered else "hit"
        persistent_off: CacheCell = "off" if not self.persistent_enabled else "skipped"
        if not python_entered:
            cells.update(
                jaxpr="skipped", lowering="skipped", executable="skipped", persistent=persistent_off
            )
            return cells
        cells["jaxpr"] = "miss" if self.trace_events > 0 else "hit"
        lo_h, lo_m = self.delta("pjit_lower")
        cells["lowering"] = "miss" if lo_m > 0 else ("hit" if lo_h > 0 else "skipped")
        if cells["lowering"] != "miss":
            cells.update(executable="skipped", persistent=persistent_off)
            return cells
        co_h, co_m = self.delta("compilation")
        cells["executable"] = "miss" if co_m > 0 else ("hit" if co_h > 0 else "skipped")
        if cells["executable"] != "miss" or not self.persistent_enabled:
            cells["persistent"] = persistent_off
        elif self.persistent_hits > 0:
            cells["persistent"] = "hit"
        elif self.persistent_misses > 0 or self.persistent_requests > 0:
            cells["persistent"] = "miss"
        else:
            cells["persistent"] = "skipped"
        return cells

    def layer(self) -> CacheLayer:
        """The deepest cache that answered: ``cpp``; ``lowering`` (the lowering cache hit,
        whether or not the jaxpr cache hit before it: nothing lowered or compiled);
        ``executable``; ``persistent``; ``jaxpr`` (the jaxpr cache hit and no deeper cache was
        consulted); or ``compile`` (XLA compiled)."""
        c = self.cells()
        if c["cpp"] == "hit":
            return "cpp"
        deeper: tuple[CacheLayer, ...] = ("lowering", "executable", "persistent")
        for layer in deeper:
            if c[layer] == "hit":
                return layer
        if c["jaxpr"] == "hit" and c["lowering"] == "skipped":
            return "jaxpr"
        return "compile"


class _BodyWindow:
    """While active, sums what the counters moved while ``fun``'s own code ran (its body under
    the trace: the lookups of the jits it calls, e.g. ``jnp`` helpers' inner jits), found with
    ``sys.setprofile`` call/return events of ``fun.__code__`` (recursion counted once)."""

    def __init__(self, fun: Any) -> None:
        import inspect

        self.code = getattr(inspect.unwrap(fun), "__code__", None)
        self.moved: dict[str, tuple[int, int]] = {name: (0, 0) for name in COUNTED_CACHES}
        self._depth = 0
        self._start: dict[str, tuple[int, int]] = {}
        self._saved: Any = None

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        del arg
        if frame.f_code is not self.code:
            return
        if event == "call":
            if self._depth == 0:
                self._start = counter_snapshot()
            self._depth += 1
        elif event == "return" and self._depth > 0:
            self._depth -= 1
            if self._depth == 0:
                now = counter_snapshot()
                for name, (h, m) in now.items():
                    h0, m0 = self._start[name]
                    dh, dm = self.moved[name]
                    self.moved[name] = (dh + h - h0, dm + m - m0)

    def __enter__(self) -> _BodyWindow:
        if self.code is not None:
            self._saved = sys.getprofile()
            sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.code is not None:
            sys.setprofile(self._saved)


def observe_jit_call(jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> JitCallRecord:
    """Call ``jitted(*args, **kwargs)`` once (blocking on the outputs) and read what JAX's caches,
    ``jax.monitoring`` timers, persistent-cache events and explain-cache-miss log said."""
    fun_name = jitted_name(jitted)
    jit_name = f"jit({fun_name})"
    timers = {"trace": 0.0, "lower": 0.0, "compile": 0.0}
    counts = {"trace": 0, "compile": 0, "p_hit": 0, "p_miss": 0, "p_req": 0}

    def on_duration(event: str, duration_secs: float, **kw: str | int) -> None:
        name = kw.get("fun_name")
        if event == TRACE_EVENT and name == fun_name:
            timers["trace"] += duration_secs * 1e3
            counts["trace"] += 1
        elif event == LOWER_EVENT and name == jit_name:
            timers["lower"] += duration_secs * 1e3
        elif event == COMPILE_EVENT and name == jit_name:
            timers["compile"] += duration_secs * 1e3
            counts["compile"] += 1

    def on_event(event: str, **kw: str | int) -> None:
        del kw
        if event == PERSISTENT_HIT_EVENT:
            counts["p_hit"] += 1
        elif event == PERSISTENT_MISS_EVENT:
            counts["p_miss"] += 1
        elif event == PERSISTENT_REQUEST_EVENT:
            counts["p_req"] += 1

    handler = _ListHandler()
    logger = logging.getLogger(EXPLAIN_LOGGER)
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.propagate = False
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)
    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    body = _BodyWindow(jitted_fun(jitted))
    try:
        with jax.explain_cache_misses(True):
            size_before = int(jitted._cache_size())
            before = counter_snapshot()
            with body:
                out = jitted(*args, **kwargs)
            raw_after = counter_snapshot()
            size_after = int(jitted._cache_size())
        jax.block_until_ready(out)
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
        jax.monitoring.unregister_event_listener(on_event)
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
    after = {
        name: (h - body.moved[name][0], m - body.moved[name][1])
        for name, (h, m) in raw_after.items()
    }
    return JitCallRecord(
        fun_name=fun_name,
        before=before,
        after=after,
        cpp_size_before=size_before,
        cpp_size_after=size_after,
        traced=counts["trace"] > 0,
        trace_events=counts["trace"],
        compile_events=counts["compile"],
        timers_ms=timers,
        persistent_hits=counts["p_hit"],
        persistent_misses=counts["p_miss"],
        persistent_requests=counts["p_req"],
        persistent_enabled=persistent_cache_enabled(),
        explanation=tidy_explanation(handler.messages),
        messages=list(handler.messages),
        out=out,
        inner=dict(body.moved),
        filtered=body.code is not None,
    )


def multiline_jaxpr_view(closed_jaxpr: Any) -> Any:
    """:func:`jaxpr_view` of ``closed_jaxpr`` whose ``text`` is JAX's printout broken over
    lines: ``str(closed_jaxpr)`` puts a short jaxpr on one line; then it is printed again by
    JAX's pretty printer one column narrower (``pretty_print(width=len - 1)``), which breaks
    the ``let`` block into one eqn per line and leaves everything else as JAX prints it."""
    from jaxscope.internals.views import jaxpr_view

    view = jaxpr_view(closed_jaxpr)
    if "\n" in view.text:
        return view
    text = closed_jaxpr.pretty_print(width=max(len(view.text) - 1, 1))
    return view.model_copy(update={"text": str(text)})
