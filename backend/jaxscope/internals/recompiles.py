"""Watch a training loop step by step: which steps compiled, what JAX keyed each compile on, and
how that key differs from the closest earlier one (the recompile hunt's cause).

Sources (JAX 0.10.2):

* Steps. A *step* is one top-level call of a watched callable (the snippet's ``step``, or, when
  the snippet has none, every function ``jax.jit`` returns while the loop runs and every jitted
  function at the snippet's top level). :class:`StepWatch` wraps them; a call made while another
  step runs, or under a trace (``core.trace_state_clean()`` false), is part of that step.
* Keys. A ``jit`` call that misses the C++ fast path (``jaxlib`` ``PjitFunction``) runs
  ``pjit._infer_params(fun, jit_info, args, kwargs)``, which looks its key up in
  ``pjit._infer_params_cached(fun, jit_info, arg_signature, avals, ctx_mesh)`` (a
  ``weakref_lru_cache``, whose key also holds ``config.trace_context()``). Both module globals
  are looked up at call time, so :func:`watching_jit_keys` wraps them for the run: the outer
  wrapper sees the arguments (placement of committed arrays) and the user's call site, the inner
  one the key JAX keyed on and whether it hit (``entry.pjit_params`` already set) or missed (a
  fresh entry: JAX traces next). A C++ fast-path hit runs neither: nothing is recorded, nothing
  compiles.
* Compiles. ``jax.monitoring`` duration events ``/jax/core/compile/{jaxpr_trace_duration,
  jaxpr_to_mlir_module_duration, backend_compile_duration}`` (``dispatch.py``); each is
  attributed to the latest top-level key record before it (JAX traces inside
  ``_infer_params``, then lowers and compiles in ``_run_python_pjit`` before the call returns).
* JAX's own words: with ``jax.explain_cache_misses`` and ``jax.log_compiles`` on, the messages of
  the loggers ``jax._src.interpreters.partial_eval`` (``TRACING CACHE MISS``),
  ``jax._src.dispatch`` (``Finished tracing/.../XLA compilation of ...``) and
  ``jax._src.interpreters.pxla`` (``Compiling jit(f) with global shapes and types ...``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.monitoring
from jax._src import config as jax_config
from jax._src import core, pjit, source_info_util

from jaxscope.internals.cache import fresh_caches
from jaxscope.internals.monitoring import COMPILE_EVENT, LOWER_EVENT, TRACE_EVENT
from jaxscope.internals.patching import patched
from jaxscope.internals.structure_change import structure_change
from jaxscope.protocol import SourceLoc
from jaxscope.snippet_model import SNIPPET_FILENAME

source_info_util.register_exclusion(__file__)

LOGGERS = (
    "jax._src.interpreters.partial_eval",
    "jax._src.dispatch",
    "jax._src.interpreters.pxla",
)


def reset_caches() -> None:
    """Start from a clean cache state: ``jax.clear_caches()`` (every Python-level cache in
    ``util._caches`` and every jitted function's C++ cache) and :func:`fresh_caches` (also the
    call sites ``pe.explain`` remembers)."""
    jax.clear_caches()
    fresh_caches()


def trace_state_clean() -> bool:
    """``core.trace_state_clean()``: no trace is active (a ``jit`` call here is top-level)."""
    return bool(core.trace_state_clean())


def trace_context_entries() -> dict[str, str]:
    """``config.trace_context()`` by name (``config.trace_context_names()``), values printed:
    the configuration a ``jit`` cache key holds (changing one forces a retrace)."""
    names = jax_config.trace_context_names()
    values = jax_config.trace_context()
    return {str(n): str(v) for n, v in zip(names, values, strict=False)}


def user_frame() -> SourceLoc | None:
    """The innermost frame of the user's snippet on the Python stack (the call site)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_filename == SNIPPET_FILENAME:
            fr = source_info_util.raw_frame_to_frame(code, frame.f_lasti)
            return SourceLoc(
                line=fr.start_line,
                column=fr.start_column,
                end_line=fr.end_line,
                end_column=fr.end_column,
                function=fr.function_name,
            )
        frame = frame.f_back
    return None


def definition(fun: Any) -> tuple[str, int, str]:
    """``(filename, first line, name)`` of the Python function under ``fun`` (through
    ``functools.partial`` and ``__wrapped__``, e.g. ``jax.grad(loss)`` -> ``loss``)."""
    name = getattr(fun, "__name__", type(fun).__name__)
    seen = 0
    while seen < 16:
        seen += 1
        if isinstance(fun, functools.partial):
            fun = fun.func
            continue
        wrapped = getattr(fun, "__wrapped__", None)
        if wrapped is not None:
            fun = wrapped
            continue
        break
    code = getattr(fun, "__code__", None)
    if code is None:
        return ("", 0, name)
    return (code.co_filename, code.co_firstlineno, name)


def _leaf_paths(treedef: Any, prefix: str) -> list[str]:
    """Key paths of ``treedef``'s leaves, prefixed with the argument's name."""
    try:
        tree = treedef.unflatten(list(range(treedef.num_leaves)))
        flat, _ = jax.tree_util.tree_flatten_with_path(tree)
        return [prefix + jax.tree_util.keystr(path) for path, _ in flat]
    except Exception:  # a custom node that cannot be rebuilt from ints
        return [f"{prefix}[{i}]" for i in range(treedef.num_leaves)]


def _aval_text(aval: Any) -> str:
    text = str(aval.str_short(short_dtypes=True)) if hasattr(aval, "str_short") else str(aval)
    if getattr(aval, "weak_type", False):
        text += " weak"
    return text


@dataclass
class KeyRecord:
    """What one ``jit`` call that missed the C++ fast path was keyed on.

    ``avals``: argument leaf path -> aval text (``f32[4,3]``, `` weak`` appended for a weak
    type); ``static``: static argument -> ``repr``; ``trees``: argument -> pytree structure;
    ``context``: the tracing context by name; ``placement``: committed argument leaves ->
    sharding. ``hit``: ``_infer_params_cached`` already held a jaxpr (no trace).
    """

    seq: int
    step: int | None
    fun: Any
    fun_name: str
    defined_file: str
    defined_line: int
    call_site: SourceLoc | None
    top_level: bool
    avals: dict[str, str] = field(default_factory=dict)
    static: dict[str, str] = field(default_factory=dict)
    trees: dict[str, str] = field(default_factory=dict)
    treedefs: dict[str, Any] = field(default_factory=dict)  # the PyTreeDefs ``trees`` prints
    context: dict[str, str] = field(default_factory=dict)
    placement: dict[str, str] = field(default_factory=dict)
    hit: bool | None = None
    entry: Any = None
    timers_ms: dict[str, float] = field(default_factory=dict)
    compiled: bool = False

    @property
    def user(self) -> bool:
        return self.defined_file == SNIPPET_FILENAME

    def closed_jaxpr(self) -> Any:
        """The jaxpr JAX traced for this key (``entry.pjit_params.params['jaxpr']``)."""
        params = getattr(self.entry, "pjit_params", None)
        return None if params is None else params.params.get("jaxpr")


@dataclass
class StepRecord:
    """One step: its wall time (ms, outputs waited for), the key records and the log lines
    made while it ran, and the compile events (``fun_name``, ms) in order."""

    index: int
    duration_ms: float = 0.0
    keys: list[KeyRecord] = field(default_factory=list)
    compiles: list[tuple[str, float]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    explain: list[str] = field(default_factory=list)


class _LogHandler(logging.Handler):
    def __init__(self, watch: Watch) -> None:
        super().__init__(level=logging.WARNING)
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        self.watch.on_log(record.name, record.getMessage())


class BudgetReached(BaseException):
    """Raised at the start of a step once the watched loop has run for its time budget, or
    has run its ``max_steps`` steps (then ``max_steps`` is set): a ``BaseException``, so that a
    driver's ``except Exception`` does not swallow it."""

    def __init__(self, steps_run: int, elapsed_s: float, max_steps: int | None = None) -> None:
        super().__init__(f"stopped after {steps_run} steps ({elapsed_s:.1f} s)")
        self.steps_run = steps_run
        self.elapsed_s = elapsed_s
        self.max_steps = max_steps


class Watch:
    """The state of one watched run (see :func:`watching`).

    ``on_step`` is called with each step's record as the step finishes (also when it raised);
    once ``budget_s`` seconds (wall clock) have passed since the watch began, or ``max_steps``
    steps have run, the next step raises :class:`BudgetReached` instead of running (a loop
    longer than the cap is stopped, not run on unwatched).
    """

    def __init__(
        self,
        max_steps: int,
        on_step: Callable[[StepRecord], None] | None = None,
        budget_s: float | None = None,
    ) -> None:
        self.max_steps = max_steps
        self.on_step = on_step
        self.budget_s = budget_s
        self.started = time.perf_counter()
        self.steps: list[StepRecord] = []
        self.current: StepRecord | None = None
        self.depth = 0
        self.seq = 0
        self.stack: list[KeyRecord] = []
        self.last_top: KeyRecord | None = None
        self.records: list[KeyRecord] = []
        self.lock = threading.RLock()

    # -- steps ------------------------------------------------------------------------------
    def call_step(self, fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        if self.depth or not trace_state_clean():
            return fn(*args, **kwargs)
        elapsed = time.perf_counter() - self.started
        if self.budget_s is not None and elapsed >= self.budget_s:
            raise BudgetReached(len(self.steps), elapsed)
        if len(self.steps) >= self.max_steps:
            raise BudgetReached(len(self.steps), elapsed, max_steps=self.max_steps)
        step = StepRecord(index=len(self.steps))
        self.steps.append(step)
        self.current = step
        self.depth += 1
        t0 = time.perf_counter()
        try:
            out = fn(*args, **kwargs)
            jax.block_until_ready(out)
            return out
        finally:
            step.duration_ms = (time.perf_counter() - t0) * 1e3
            self.depth -= 1
            self.current = None
            if self.on_step is not None:
                self.on_step(step)

    # -- keys -------------------------------------------------------------------------------
    def begin_key(
        self, fun: Any, ji: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> KeyRecord:
        filename, line, name = definition(fun)
        rec = KeyRecord(
            seq=self.seq,
            step=self.current.index if self.current is not None else None,
            fun=fun,
            fun_name=name,
            defined_file=filename,
            defined_line=line,
            call_site=user_frame(),
            top_level=trace_state_clean(),
        )
        self.seq += 1
        if rec.top_level and rec.user:
            rec.placement = _placement(fun, ji, args, kwargs)
        return rec

    def fill_key(self, rec: KeyRecord, fun: Any, ji: Any, signature: Any, avals: Any) -> None:
        if not (rec.top_level and rec.user):
            return
        names = _dynamic_arg_names(fun, ji, signature)
        treedefs = list(signature.dynamic_arg_treedefs)
        i = 0
        for arg_name, treedef in zip(names, treedefs, strict=False):
            rec.trees[arg_name] = str(treedef)
            rec.treedefs[arg_name] = treedef
            for path in _leaf_paths(treedef, arg_name):
                if i < len(avals):
                    rec.avals[path] = _aval_text(avals[i])
                i += 1
        static_names = _static_arg_names(fun, ji)
        for n, v in zip(static_names, signature.static_args, strict=False):
            rec.static[n] = repr(v)
        for n, v in zip(
            signature.static_arg_names, signature.static_args[len(static_names) :], strict=False
        ):
            rec.static[str(n)] = repr(v)
        rec.context = trace_context_entries()

    def on_duration(self, event: str, secs: float, fun_name: Any) -> None:
        rec = self.last_top
        ms = float(secs) * 1e3
        if event == TRACE_EVENT and self.stack:
            rec = next((r for r in reversed(self.stack) if r.top_level), rec)
        if rec is not None and event in (TRACE_EVENT, LOWER_EVENT, COMPILE_EVENT):
            stage = {TRACE_EVENT: "trace", LOWER_EVENT: "lower", COMPILE_EVENT: "compile"}[event]
            rec.timers_ms[stage] = rec.timers_ms.get(stage, 0.0) + ms
            if event == COMPILE_EVENT:
                rec.compiled = True
        if event == COMPILE_EVENT and self.current is not None:
            self.current.compiles.append((str(fun_name), ms))

    def on_log(self, logger: str, message: str) -> None:
        if self.current is None:
            return
        if logger == LOGGERS[0]:
            self.current.explain.append(message)
        else:
            self.current.log.append(message)


def _signature_params(fun: Any) -> list[str] | None:
    try:
        return [
            p.name
            for p in inspect.signature(fun).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return None


def _static_arg_names(fun: Any, ji: Any) -> list[str]:
    params = _signature_params(fun) or []
    nums = sorted(int(n) for n in (ji.static_argnums or ()))
    return [params[n] if n < len(params) else f"args[{n}]" for n in nums]


def _dynamic_arg_names(fun: Any, ji: Any, signature: Any) -> list[str]:
    """Names of the dynamic arguments (positional, then keyword), in ``arg_signature`` order."""
    params = _signature_params(fun) or []
    static = {int(n) for n in (ji.static_argnums or ())}
    n_kw = len(signature.dynamic_arg_names)
    n_pos = len(signature.dynamic_arg_treedefs) - n_kw
    names: list[str] = []
    pos = 0
    while len(names) < n_pos:
        if pos not in static:
            names.append(params[pos] if pos < len(params) else f"args[{pos}]")
        pos += 1
    names.extend(str(n) for n in signature.dynamic_arg_names)
    return names


def _placement(fun: Any, ji: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, str]:
    """Committed ``jax.Array`` arguments -> their sharding (an uncommitted array follows the
    computation; a committed one is part of what the lowering is keyed on)."""
    out: dict[str, str] = {}
    params = _signature_params(fun) or []
    items = [(params[i] if i < len(params) else f"args[{i}]", a) for i, a in enumerate(args)]
    items += list(kwargs.items())
    for name, value in items:
        flat, _ = jax.tree_util.tree_flatten_with_path(value)
        for path, leaf in flat:
            if isinstance(leaf, jax.Array) and getattr(leaf, "committed", False):
                out[name + jax.tree_util.keystr(path)] = str(leaf.sharding)
    return out


@contextlib.contextmanager
def watching_jit_keys(watch: Watch) -> Iterator[None]:
    """Wrap ``pjit._infer_params`` and ``pjit._infer_params_cached`` for the block, recording
    one :class:`KeyRecord` per ``jit`` call that misses the C++ fast path."""
    orig_infer = pjit._infer_params
    orig_cached = pjit._infer_params_cached

    def infer_params(fun: Any, ji: Any, args: Any, kwargs: Any) -> Any:
        rec = watch.begin_key(fun, ji, args, kwargs)
        watch.stack.append(rec)
        try:
            return orig_infer(fun, ji, args, kwargs)
        finally:
            watch.stack.pop()
            if rec.top_level:
                watch.last_top = rec
                if rec.user and rec.step is not None:
                    watch.records.append(rec)
                    watch.steps[rec.step].keys.append(rec)

    def infer_params_cached(fun: Any, ji: Any, signature: Any, avals: Any, ctx_mesh: Any) -> Any:
        entry = orig_cached(fun, ji, signature, avals, ctx_mesh)
        if watch.stack and watch.stack[-1].fun is fun and watch.stack[-1].hit is None:
            rec = watch.stack[-1]
            rec.hit = entry.pjit_params is not None
            rec.entry = entry
            watch.fill_key(rec, fun, ji, signature, avals)
        return entry

    with patched(pjit, _infer_params=infer_params, _infer_params_cached=infer_params_cached):
        yield


class _WatchedJit:
    """A ``jax.jit`` result whose top-level calls are steps; everything else is delegated."""

    def __init__(self, watch: Watch, jitted: Any) -> None:
        self._watch = watch
        self._jitted = jitted
        functools.update_wrapper(self, jitted)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._watch.call_step(self._jitted, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)


def is_jitted(obj: Any) -> bool:
    """Whether ``obj`` is what ``jax.jit`` returns (a callable with ``lower`` and ``trace``)."""
    return callable(obj) and hasattr(obj, "lower") and hasattr(obj, "trace")


@contextlib.contextmanager
def watching_steps(watch: Watch, namespace: dict[str, Any], name: str = "step") -> Iterator[str]:
    """Make the snippet's steps observable for the block; yields what is watched.

    With ``namespace[name]`` defined (the snippet's ``step``, jitted or not), it is rebound to a
    wrapper whose top-level calls are steps (the driver looks it up at call time). Without it,
    every jitted function at the snippet's top level is wrapped, and ``jax.jit`` (the public
    attribute) returns watched functions while the block runs (a ``jax.jit`` inside the loop).
    Everything is restored on exit.
    """
    saved: dict[str, Any] = {}
    if name in namespace and callable(namespace[name]):
        fn = namespace[name]
        saved[name] = fn
        namespace[name] = (
            _WatchedJit(watch, fn)
            if is_jitted(fn)
            else functools.wraps(fn)(lambda *a, **k: watch.call_step(fn, a, k))
        )
        try:
            yield f"calls of `{name}`"
        finally:
            namespace.update(saved)
        return
    for key, value in list(namespace.items()):
        if is_jitted(value):
            saved[key] = value
            namespace[key] = _WatchedJit(watch, value)
    real_jit = jax.jit

    def jit(fun: Any = None, /, **kw: Any) -> Any:
        if fun is None:
            return lambda f: _WatchedJit(watch, real_jit(f, **kw))
        return _WatchedJit(watch, real_jit(fun, **kw))

    jax.jit = jit
    try:
        yield "top-level calls of jitted functions"
    finally:
        jax.jit = real_jit
        namespace.update(saved)


@contextlib.contextmanager
def watching(
    namespace: dict[str, Any],
    max_steps: int = 200,
    on_step: Callable[[StepRecord], None] | None = None,
    budget_s: float | None = None,
) -> Iterator[tuple[Watch, str]]:
    """Reset JAX's caches, then watch the block: steps, jit keys, compile events and JAX's
    explain/compile logs (``jax.explain_cache_misses`` and ``jax.log_compiles`` on).
    ``on_step`` and ``budget_s``: see :class:`Watch` (the budget counts from here)."""
    reset_caches()
    watch = Watch(max_steps, on_step, budget_s)
    handler = _LogHandler(watch)
    saved_loggers = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        saved_loggers.append((logger, logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.propagate = False
        if logger.getEffectiveLevel() > logging.WARNING:
            logger.setLevel(logging.WARNING)

    def listener(event: str, duration_secs: float, **kwargs: Any) -> None:
        watch.on_duration(event, duration_secs, kwargs.get("fun_name"))

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        with (
            jax.explain_cache_misses(True),
            jax.log_compiles(True),
            watching_jit_keys(watch),
            watching_steps(watch, namespace) as what,
        ):
            yield watch, what
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
        for logger, level, propagate in saved_loggers:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


# -- the structured diff ----------------------------------------------------------------------


@dataclass(frozen=True)
class KeyEntryRecord:
    """One entry of what JAX keyed a jit call on, here (``now``) and in the closest earlier key
    (``before``, ``None`` without one); ``differs`` marks an entry that changed. The caches
    exhibit's ``KeyEntryDiff`` event model has these fields (the recompile_hunt probe makes it
    of this record, design 0059)."""

    name: str
    now: str
    before: str | None = None
    differs: bool = False


@dataclass
class Diagnosis:
    """Why one key compiled: ``kind`` (``first``, ``new_function``, ``context``, ``static``,
    ``pytree``, ``weak_type``, ``dtype``, ``shape``, ``placement``, ``unknown``), the cause in
    words, the fix, the entries side by side and the closest earlier key."""

    kind: str
    cause: str
    fix: str | None
    entries: list[KeyEntryRecord]
    closest: KeyRecord | None


def _entries(now: KeyRecord, before: KeyRecord | None) -> list[KeyEntryRecord]:
    def row(name: str, a: str | None, b: str | None) -> KeyEntryRecord:
        return KeyEntryRecord(
            name=name, now=a or "-", before=b, differs=before is not None and a != b
        )

    same_fun = before is not None and before.fun is now.fun
    fn_now = f"{now.fun_name} id={id(now.fun)} defined at line {now.defined_line}"
    fn_before = (
        None
        if before is None
        else f"{before.fun_name} id={id(before.fun)} defined at line {before.defined_line}"
    )
    out = [
        KeyEntryRecord(
            name="function",
            now=fn_now,
            before=fn_before,
            differs=before is not None and not same_fun,
        )
    ]
    b_trees = before.trees if before else {}
    for k in sorted(set(now.trees) | set(b_trees)):
        out.append(row(f"pytree {k}", now.trees.get(k), b_trees.get(k) if before else None))
    b_avals = before.avals if before else {}
    for k in list(now.avals) + [k for k in b_avals if k not in now.avals]:
        out.append(row(k, now.avals.get(k), b_avals.get(k) if before else None))
    b_static = before.static if before else {}
    for k in sorted(set(now.static) | set(b_static)):
        out.append(row(f"static {k}", now.static.get(k), b_static.get(k) if before else None))
    b_place = before.placement if before else {}
    for k in sorted(set(now.placement) | set(b_place)):
        out.append(
            row(
                f"placement {k}",
                now.placement.get(k, "uncommitted"),
                b_place.get(k, "uncommitted") if before else None,
            )
        )
    b_ctx = before.context if before else {}
    ctx_diff = [k for k in now.context if before is not None and b_ctx.get(k) != now.context[k]]
    if ctx_diff:
        for k in ctx_diff:
            out.append(row(f"context {k}", now.context[k], b_ctx.get(k)))
    else:
        out.append(
            KeyEntryRecord(
                name="tracing context",
                now="same" if before else "-",
                before="same" if before else None,
            )
        )
    return out


def _score(now: KeyRecord, before: KeyRecord) -> int:
    return sum(e.differs for e in _entries(now, before))


_FIX = {
    "new_function": (
        "Hoist the jit: create the jitted function once, outside the loop (e.g. `step = "
        "jax.jit(update)` at the top level, with what the closure captured passed as arguments), "
        "and call that same object every step."
    ),
    "weak_type": (
        "Fix the dtype: start from a strongly typed array (e.g. `jnp.zeros((), jnp.float32)` or "
        "`jnp.asarray(0.0, jnp.float32)` instead of the Python scalar `0.0`), so the first step "
        "sees the type the step returns."
    ),
    "dtype": "Fix the dtype: cast the input to one dtype every step (`x.astype(jnp.float32)`).",
    "shape": (
        "Pad the batch: give every batch the same shape (pad the last one and mask the padding, "
        "or drop the ragged remainder), so one compiled program serves every step."
    ),
    "static": (
        "A static argument changed value: each value compiles its own program. Pass it as a "
        "traced argument, or keep the set of values small."
    ),
    "pytree": (
        "Keep the input's structure fixed: the same containers and keys every step (no key "
        "added on the first update, no None where an array was)."
    ),
    "context": (
        "Set the configuration once, outside the loop: it is part of the tracing context, so "
        "changing it forces a retrace."
    ),
    "placement": (
        "Put the inputs on the same device/sharding every step (or leave them uncommitted): a "
        "new placement compiles a new lowering of the same jaxpr."
    ),
}


def diagnose(now: KeyRecord, earlier: list[KeyRecord]) -> Diagnosis:
    """Compare ``now`` with the closest of the ``earlier`` keys: the same function object if
    JAX saw it before (fewest differing entries, latest on ties), else a function defined at the
    same place (the same code re-created), else none (a first compile)."""
    same = [r for r in earlier if r.fun is now.fun]
    site = [
        r
        for r in earlier
        if (r.defined_file, r.defined_line, r.fun_name)
        == (now.defined_file, now.defined_line, now.fun_name)
    ]
    pool = same or site
    if not pool:
        return Diagnosis(
            kind="first",
            cause=(
                f"first call of {now.fun_name}: nothing cached yet, so JAX traces and compiles it"
            ),
            fix=None,
            entries=_entries(now, None),
            closest=None,
        )
    closest = min(reversed(pool), key=lambda r: _score(now, r))
    entries = _entries(now, closest)
    differing = [e for e in entries if e.differs]
    line = now.call_site.line if now.call_site else now.defined_line
    where = f"{SNIPPET_FILENAME}:{line}"
    if not same:
        kind = "new_function"
        site_same = (
            closest.call_site is not None
            and now.call_site is not None
            and (closest.call_site.line == now.call_site.line)
        )
        place = "call site" if site_same else "definition line"
        cause = (
            f"new function object at the same {place} ({where}): {now.fun_name} is re-created "
            "every call, so its cache entry is never reused"
        )
    elif any(e.name.startswith("context ") for e in differing):
        kind = "context"
        names = ", ".join(
            e.name[len("context ") :] for e in differing if e.name.startswith("context ")
        )
        cause = f"the tracing context changed ({names}) at {where}"
    elif any(e.name.startswith("pytree ") for e in differing):
        e = next(e for e in differing if e.name.startswith("pytree "))
        kind = "pytree"
        arg = e.name[len("pytree ") :]
        change = (
            structure_change(arg, now.treedefs[arg], closest.treedefs[arg])
            if arg in now.treedefs and arg in closest.treedefs
            else None
        )
        if change is not None and change.inside:
            # A static part (an NNX GraphDef attribute) not equal although it prints the same:
            # JAX's explanation, down to the object, and the fix for that object.
            return Diagnosis(
                kind=kind,
                cause=f"{change.text()} (call at {where})",
                fix=change.fix(),
                entries=entries,
                closest=closest,
            )
        cause = f"new input structure at {arg}: now {e.now}, before {e.before}"
    elif any(e.name.startswith("static ") for e in differing):
        e = next(e for e in differing if e.name.startswith("static "))
        kind = "static"
        cause = (
            f"static argument {e.name[len('static ') :]} changed: now {e.now}, before {e.before}"
        )
    elif aval_rows := [
        e for e in differing if not e.name.startswith(("placement ", "function", "tracing"))
    ]:
        e = aval_rows[0]
        kind = _aval_kind(e.now, e.before or "")
        word = {"weak_type": "weak type", "dtype": "dtype", "shape": "shape"}[kind]
        cause = f"new {word} at {e.name}: now {e.now}, before {e.before}"
    elif any(e.name.startswith("placement ") for e in differing):
        e = next(e for e in differing if e.name.startswith("placement "))
        kind = "placement"
        what = e.name[len("placement ") :]
        cause = f"same jaxpr, new placement of {what}: now {e.now}, before {e.before}"
    else:
        kind = "unknown"
        cause = "JAX compiled again although every key entry we read is the same"
    return Diagnosis(kind=kind, cause=cause, fix=_FIX.get(kind), entries=entries, closest=closest)


def _aval_kind(now: str, before: str) -> str:
    def split(t: str) -> tuple[str, str, bool]:
        weak = t.endswith(" weak")
        t = t.removesuffix(" weak")
        dtype, _, shape = t.partition("[")
        return dtype, shape, weak

    dn, sn, wn = split(now)
    db, sb, wb = split(before)
    if dn == db and sn == sb and wn != wb:
        return "weak_type"
    if dn != db:
        return "dtype"
    return "shape"
