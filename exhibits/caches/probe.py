"""The caches exhibit's probe: which cache layer answered each jit call, and what JAX keyed on.

Two ways to give the calls (see ``docs/design/0016-cache-layers.md``):

* ``calls`` mode: the snippet defines ``calls`` (a list of argument tuples, tried in order on
  ``jax.jit(f, static_argnums, static_argnames)``, or on ``f`` itself when it already is a jit
  object), or the run names a ``preset`` (``RunOptions.preset``) that builds the sequence from
  ``args`` (:data:`PRESETS`).
* ``driver`` mode: otherwise ``f(*args, **kwargs)`` is called as plain Python, and every call it
  makes of a jit object of the snippet that it can reach (globals, dicts, classes and instances,
  closures; or made during the run) is observed (``internals.cache_layers.watching_jit_calls``);
  JAX's internal jits pass through unwatched. A ``driver_run_summary`` ends the run: JAX's traces
  and compiles no observed call accounts for (``exhibits/caches/driver.py``), and a note when
  the timeline is empty or incomplete.

The run starts from a clean cache state (``caches_reset``). Per call, one ``jit_call_observed``
(stage ``call``): the layer that answered, hit/miss per layer, JAX's counters before/after, the
``jax.monitoring`` timers, JAX's explain-cache-miss text, and our diff of the key entries against
the closest earlier call (the one with the fewest differing entries; the latest on a tie).
"""

from __future__ import annotations

import contextlib
import os
import types
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import jax
import numpy as np
from jaxscope.exhibit_api import (
    COUNTED_CACHES,
    SNIPPET_FILENAME,
    InvalidSnippet,
    JitCallRecord,
    ProbeContext,
    SourceLoc,
    argument_trees,
    aval_text,
    blame_line,
    capture_cache_keys,
    clean_cache_dir,
    explain,
    is_jitted,
    jitted_donates,
    jitted_fun,
    jitted_name,
    jitted_statics,
    key_entries,
    mark_during,
    multiline_jaxpr_view,
    observe_jit_call,
    options_as,
    persistent_cache,
    persistent_cache_enabled,
    persistent_module_name,
    persistent_settings,
    reset_caches,
    setting_line,
    structure_change,
    trace_context_now,
    watching_jit_calls,
)

from exhibits.caches.driver import summary as driver_summary
from exhibits.caches.events import CacheCounterView, CachesReset, JitCallObserved, KeyEntryDiff

from .options import CachesOptions

MAX_CALLS = 64

# preset name -> what it does to the snippet's (f, args), in words (also the frontend's list).
PRESETS: dict[str, str] = {
    "same": "the same call twice",
    "new_shape": "the same call, then one axis of the data one longer: the batch axis the "
    "snippet's in_axes names for each argument (None: kept), else axis 0 of each argument that "
    "is an array (containers such as params kept), else axis 0 of every array; keyword arguments "
    "as positional ones, PRNG keys kept",
    "new_dtype": "the same call, then floats as float16 and ints as int16 (PRNG keys kept)",
    "weak_type": "a Python scalar in place of the first array argument (positional, then keyword)",
    "static_changed": "a static argument changed, then changed back",
    "redefined": "f redefined: a new function object from the same line",
    "new_closure": "a new closure each time: three calls, each jitting a new function object "
    "made from f's code (as jax.jit(make_step(s)) in a loop does)",
    "numpy": "the array arguments as numpy arrays",
    "committed": "the array arguments committed to a device with jax.device_put",
    "matmul_precision": "the same call inside jax.default_matmul_precision('highest')",
    "persistent": "the persistent disk cache on (a new temporary directory): the call, then "
    "JAX's in-memory caches cleared (jax.clear_caches(), as a new process starts) and the same "
    "call again, answered from disk",
}

# The key entry that tells the persistent preset's two calls apart: what was in memory.
MEMORY_ENTRY = "in-memory caches"
MEMORY_AT_START = "cleared at the start of the run"
MEMORY_CLEARED = "cleared again just before this call (jax.clear_caches(), as a new process starts)"


@dataclass
class PlannedCall:
    """One call of the sequence: the jit object, its arguments, an optional config context."""

    jitted: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    context: str | None = None
    memory: str | None = None  # the persistent preset: what JAX's in-memory caches hold
    # The preset that made these arguments from the snippet's (new_shape, new_dtype, ...):
    # f may not accept them, and then the run says the preset's call is the one that failed.
    changed: str | None = None


# A dynamic argument's slot: a positional argument's index, or a keyword argument's name.
Slot = int | str


def _is_key(x: Any) -> bool:
    """A typed PRNG key array (``jax.random.key``: an extended dtype). Not data to grow or cast,
    and numpy cannot hold it: the presets keep it as it is."""
    dtype = getattr(x, "dtype", None)
    return dtype is not None and bool(jax.numpy.issubdtype(dtype, jax.dtypes.extended))


def _is_array(x: Any) -> bool:
    """A ``jax.Array`` or numpy array of numbers (not a PRNG key array)."""
    return isinstance(x, (jax.Array, np.ndarray)) and not _is_key(x)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _grow(x: Any, axis: int = 0) -> Any:
    """``x`` one longer along ``axis`` (its last entry repeated); a scalar becomes shape (1,);
    an array with no such axis is kept. A numpy array stays a numpy array (a ``jax.Array``
    becomes one), so that only its aval differs from the call before, not its placement."""
    kind = np.asarray if isinstance(x, np.ndarray) else jax.numpy.asarray
    host = np.asarray(x)
    if host.ndim == 0:
        return kind(np.full((1,), host))
    if not -host.ndim <= axis < host.ndim:
        return x
    pad = [(0, 0)] * host.ndim
    pad[axis] = (0, 1)
    return kind(np.pad(host, pad, mode="edge"))


def _cast(x: Any) -> Any:
    """Floats as float16, ints as int16 (Python numbers too, as the tracing exhibit's "call
    again" casts them); ``x`` itself when there is nothing to cast (bool, complex, a PRNG key,
    already float16/int16). A numpy array stays numpy."""
    if _is_array(x):
        dt = x.dtype
        if jax.numpy.issubdtype(dt, jax.numpy.floating):
            return x if dt == np.float16 else x.astype(np.float16)
        if jax.numpy.issubdtype(dt, jax.numpy.integer):
            return x if dt == np.int16 else x.astype(np.int16)
        return x
    if isinstance(x, float):
        return np.float16(x)
    if _is_number(x) and -(2**15) <= x < 2**15:
        return np.int16(x)
    return x


def _to_numpy(x: Any) -> Any:
    return np.asarray(x) if isinstance(x, jax.Array) and not _is_key(x) else x


def _bump(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "_"
    return None


@dataclass(frozen=True)
class _Arguments:
    """The snippet's arguments as a preset changes them: ``args`` and ``kwargs`` as given, and
    which of them are static (``nums``: positions, negative ones resolved; ``names``: keyword
    names), as the jit object has them (JAX infers one from the other through f's signature)."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    nums: frozenset[int]
    names: frozenset[str]

    @staticmethod
    def of(jitted: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Arguments:
        nums, names = jitted_statics(jitted)
        n = len(args)
        return _Arguments(
            args, dict(kwargs), frozenset(i + n if i < 0 else i for i in nums), frozenset(names)
        )

    def dynamic(self) -> list[tuple[Slot, Any]]:
        """The traced arguments, positional then keyword (the batch-axis rule treats both)."""
        return [(i, a) for i, a in enumerate(self.args) if i not in self.nums] + [
            (k, v) for k, v in self.kwargs.items() if k not in self.names
        ]

    def get(self, slot: Slot) -> Any:
        return self.args[slot] if isinstance(slot, int) else self.kwargs[slot]

    def replaced(self, new: dict[Slot, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        args = tuple(new[i] if i in new else a for i, a in enumerate(self.args))
        return args, {k: new[k] if k in new else v for k, v in self.kwargs.items()}

    def mapped(
        self, fns: dict[Slot, Callable[[Any], Any]]
    ) -> tuple[tuple[Any, ...], dict[str, Any], int]:
        """Each slot's leaves through its function; and how many leaves changed (a function
        returns the leaf itself for one it keeps)."""
        changed = 0

        def counted(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
            def one(x: Any) -> Any:
                nonlocal changed
                y = fn(x)
                changed += y is not x
                return y

            return one

        new = {s: jax.tree.map(counted(fn), self.get(s)) for s, fn in fns.items()}
        args, kwargs = self.replaced(new)
        return args, kwargs, changed

    def described(self) -> str:
        """The traced arguments in words, for a preset that found nothing to change."""
        parts = [f"{_slot_text(s)} is {_what(v)}" for s, v in self.dynamic()]
        return "; ".join(parts) if parts else "f has no traced argument"


def _slot_text(slot: Slot) -> str:
    return f"args[{slot}]" if isinstance(slot, int) else f"kwargs[{slot!r}]"


def _what(v: Any) -> str:
    if _is_key(v):
        return f"a PRNG key array {aval_text(v)} (kept: a key is not data)"
    if isinstance(v, jax.Array):
        return f"a jax.Array {aval_text(v)}"
    if isinstance(v, np.ndarray):
        return f"a numpy array {aval_text(v)}"
    if _is_number(v):
        return f"a Python {type(v).__name__} ({v!r}, weakly typed)"
    leaves = jax.tree.leaves(v)
    if leaves and leaves != [v]:
        return f"a {type(v).__name__} of {len(leaves)} leaves ({_short_list(leaves)})"
    return f"a {type(v).__name__}"


def _short_list(leaves: list[Any]) -> str:
    shown = ", ".join(aval_text(x) if hasattr(x, "dtype") else repr(x) for x in leaves[:4])
    return shown + (", ..." if len(leaves) > 4 else "")


def _nothing_to_change(preset: str, why: str, arguments: _Arguments) -> InvalidSnippet:
    return InvalidSnippet(
        f"the {preset} preset found nothing to change in your arguments: {why} "
        f"({arguments.described()}). Its call would be the same call again (a cache hit that "
        "shows nothing new). Pick another preset, or list the calls you want in `calls`."
    )


def _preset_calls(
    preset: str,
    jitted: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    in_axes: Any = None,
    source: str | None = None,
) -> list[PlannedCall]:
    """The calls ``preset`` makes of ``jitted`` (see :data:`PRESETS`). ``in_axes``: the
    snippet's ``in_axes`` setting (the vmap exhibit's batch axes), which ``new_shape`` grows.
    A preset that would change nothing (no array to grow or cast, no static argument it can
    change) raises :class:`InvalidSnippet` saying why, before any call; ``source`` (the
    snippet's) lets it point at the setting at fault (``in_axes``, ``args``, ``kwargs``)."""
    if preset not in PRESETS:
        raise InvalidSnippet(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    first = PlannedCall(jitted, args, kwargs)
    given = _Arguments.of(jitted, args, kwargs)
    if preset == "same":
        return [first, PlannedCall(jitted, args, kwargs)]
    if preset == "new_shape":
        grown, grown_kwargs = _grow_args(given, in_axes, source)
        return [
            first,
            PlannedCall(jitted, args, kwargs),
            PlannedCall(jitted, grown, grown_kwargs, changed=preset),
        ]
    if preset == "new_dtype":
        cast, cast_kwargs, n = given.mapped({s: _cast for s, _ in given.dynamic()})
        if not n:
            raise _nothing_to_change(
                preset, "no traced argument holds floats or ints to cast to float16/int16", given
            )
        return [first, PlannedCall(jitted, cast, cast_kwargs, changed=preset)]
    if preset == "weak_type":
        weak, weak_kwargs = _weak(given)
        return [first, PlannedCall(jitted, weak, weak_kwargs, changed=preset)]
    if preset == "static_changed":
        changed, changed_kwargs = _static_changed(jitted, given, source)
        return [
            first,
            PlannedCall(jitted, changed, changed_kwargs, changed=preset),
            PlannedCall(jitted, args, kwargs),
        ]
    if preset == "redefined":
        return [first, PlannedCall(_rejit(jitted), args, kwargs)]
    if preset == "new_closure":
        return [first, *(PlannedCall(_rejit(jitted), args, kwargs) for _ in range(2))]
    if preset == "numpy":
        host, host_kwargs, n = given.mapped({s: _to_numpy for s, _ in given.dynamic()})
        if not n:
            raise _nothing_to_change(preset, "no traced argument is a jax.Array", given)
        return [first, PlannedCall(jitted, host, host_kwargs, changed=preset)]
    if preset == "committed":
        dev = jax.devices()[0]

        def commit(x: Any) -> Any:
            if isinstance(x, np.ndarray) or (
                isinstance(x, jax.Array) and not (x.committed and x.devices() == {dev})
            ):
                return jax.device_put(x, dev)
            return x

        put, put_kwargs, n = given.mapped({s: commit for s, _ in given.dynamic()})
        if not n:
            raise _nothing_to_change(
                preset, f"no traced argument is an array not yet committed to {dev}", given
            )
        return [first, PlannedCall(jitted, put, put_kwargs, changed=preset)]
    if preset == "persistent":
        return [
            PlannedCall(jitted, args, kwargs, memory=MEMORY_AT_START),
            PlannedCall(jitted, args, kwargs, memory=MEMORY_CLEARED),
        ]
    # matmul_precision
    return [first, PlannedCall(jitted, args, kwargs, context="highest")]


def _weak(given: _Arguments) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A Python scalar (the first element's value) in place of the first traced argument that
    is an array, a 0-d one first; positional arguments before keyword ones. PRNG keys kept."""
    candidates = [(s, v) for s, v in given.dynamic() if _is_array(v) and np.size(v) > 0]
    scalars = [(s, v) for s, v in candidates if np.ndim(v) == 0]
    for slot, value in scalars[:1] or candidates[:1]:
        return given.replaced({slot: np.asarray(value).ravel()[0].item()})
    raise _nothing_to_change(
        "weak_type", "no traced argument is an array to pass as a Python scalar instead", given
    )


def _static_changed(
    jitted: Any, given: _Arguments, source: str | None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments with the first static argument (by position, then by name) changed: a bool
    negated, an int or float plus 1, a str with ``_`` appended."""
    raw_nums, raw_names = jitted_statics(jitted)
    passed: list[tuple[Slot, Any]] = [
        (i, given.args[i]) for i in sorted(given.nums) if 0 <= i < len(given.args)
    ] + [(k, v) for k, v in given.kwargs.items() if k in given.names]
    if not passed:
        if raw_nums or raw_names:
            declared = ", ".join(
                f"{what} {value}"
                for what, value in (("static_argnums", raw_nums), ("static_argnames", raw_names))
                if value
            )
            raise InvalidSnippet(
                "the static_changed preset needs a static argument that the call passes: f's "
                f"static arguments ({declared}) are given neither in `args` nor in `kwargs` (f "
                "uses its defaults). Pass one in `args` or `kwargs`."
            )
        raise InvalidSnippet(
            "the static_changed preset needs a static argument: set static_argnums or "
            "static_argnames in the snippet (or jit f with them)"
        )
    for slot, value in passed:
        bumped = _bump(value)
        if bumped is not None:
            return given.replaced({slot: bumped})
    slot, value = passed[0]
    params = _parameter_names(jitted_fun(jitted))
    if isinstance(slot, int):
        name = params[slot] if slot < len(params) else None
        how = next(
            (f"static_argnums {i}" for i in raw_nums if i in (slot, slot - len(given.args))),
            "static",
        )
        label = f"`{name}` (args[{slot}], {how})" if name else f"args[{slot}] ({how})"
        parts = ", ".join(
            "<another value>" if j == slot else f"args[{j}]" for j in range(len(given.args))
        )
        parts += "," if len(given.args) == 1 else ""
        todo = f"list the calls you want in `calls`, e.g. calls = [args, ({parts}), args]"
        setting = "args"
    else:
        label = f"`{slot}` (kwargs[{slot!r}], static_argnames)"
        todo = (
            "pass it in `args` (static_argnums) and list the calls you want in `calls`, each a "
            "tuple of all positional arguments"
        )
        setting = "kwargs"
    error = InvalidSnippet(
        f"the static_changed preset cannot change the static argument {label} automatically: it "
        f"is {value!r}, a {type(value).__name__}, and the preset changes only a bool (negated), "
        f"an int or a float (+1) or a str (+ '_'). Give it such a value, or {todo}."
    )
    raise blame_line(error, setting_line(source, setting) if source is not None else None)


def _parameter_names(fun: Any) -> list[str]:
    """f's positional parameter names, in order (empty when it has no readable signature)."""
    import inspect

    try:
        params = inspect.signature(fun).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]


def _copies(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` with every ``jax.Array`` leaf copied (``jax.Array.copy``: same shape, dtype,
    sharding)."""
    return tuple(
        jax.tree.map(lambda x: x.copy() if isinstance(x, jax.Array) else x, a) for a in args
    )


def _rejit(jitted: Any) -> Any:
    """``jax.jit`` of a new function object made from the jitted function's code, globals,
    defaults and closure cells (what re-running its ``def`` makes), with the same statics."""
    fun = jitted_fun(jitted)
    again = types.FunctionType(
        fun.__code__, fun.__globals__, fun.__name__, fun.__defaults__, fun.__closure__
    )
    again.__kwdefaults__ = fun.__kwdefaults__
    nums, names = jitted_statics(jitted)
    return jax.jit(again, static_argnums=nums, static_argnames=names)


def _grow_args(
    given: _Arguments, in_axes: Any = None, source: str | None = None
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """One axis of the data one longer, so that a program whose arrays must agree (a matmul of
    params and a batch) still accepts them. Keyword arguments are treated as positional ones;
    static arguments and PRNG key arrays are kept (a key is not data). With ``in_axes`` (an int,
    or one int or None per positional argument, as ``jax.vmap`` takes it): the named axis of each
    positional argument's arrays (None: the argument kept), and axis 0 of each keyword argument
    that is an array. Else axis 0 of each argument that is an array (containers of arrays, such
    as params, kept); else axis 0 of every array, and Python numbers become shape (1,). Raises
    :class:`InvalidSnippet` when ``in_axes`` names an axis an array does not have, or when
    nothing would grow."""
    dynamic = given.dynamic()
    axes = _batch_axes(in_axes, len(given.args))
    at_in_axes = setting_line(source, "in_axes") if source is not None else None
    plan: dict[Slot, int | None]
    if axes is not None:
        plan = {
            s: axes[s] if isinstance(s, int) else (0 if _is_array(v) else None) for s, v in dynamic
        }
        missing = [
            f"{_slot_text(s)}{jax.tree_util.keystr(path)} is {aval_text(x)}, with no axis {axis}"
            for s, v in dynamic
            if (axis := plan[s]) is not None
            for path, x in jax.tree_util.tree_flatten_with_path(v)[0]
            if _is_array(x) and np.ndim(x) > 0 and not -np.ndim(x) <= axis < np.ndim(x)
        ]
        if missing:
            raise blame_line(
                InvalidSnippet(
                    f"the new_shape preset cannot grow the batch axes that in_axes = {in_axes!r} "
                    f"names: {'; '.join(missing)}. Set in_axes to each argument's batch axis "
                    "(None: not batched), as jax.vmap takes it."
                ),
                at_in_axes,
            )
        numbers = False
    else:
        plain = [s for s, v in dynamic if _is_array(v)]
        numbers = not plain
        plan = {s: 0 for s in plain} if plain else {s: 0 for s, _ in dynamic}

    def grower(axis: int) -> Callable[[Any], Any]:
        def one(x: Any) -> Any:
            if _is_array(x):
                return _grow(x, axis)
            return np.asarray([x]) if numbers and _is_number(x) else x

        return one

    grown, grown_kwargs, n = given.mapped(
        {s: grower(axis) for s, axis in plan.items() if axis is not None}
    )
    if not n:
        if axes is not None:
            why = f"in_axes = {in_axes!r} names no batch axis of an array"
            raise blame_line(_nothing_to_change("new_shape", why, given), at_in_axes)
        raise _nothing_to_change(
            "new_shape", "no traced argument is an array or a Python number to grow", given
        )
    return grown, grown_kwargs


def _batch_axes(in_axes: Any, n: int) -> list[int | None] | None:
    """One axis (or None) per argument from ``in_axes`` when it has one of the plain forms
    (an int, or a tuple/list of n ints or Nones); None for anything else (absent, nested)."""
    if isinstance(in_axes, int) and not isinstance(in_axes, bool):
        return [in_axes] * n
    if isinstance(in_axes, (tuple, list)) and len(in_axes) == n:
        if all(a is None or (isinstance(a, int) and not isinstance(a, bool)) for a in in_axes):
            return list(in_axes)
    return None


@contextlib.contextmanager
def _context(name: str | None) -> Iterator[None]:
    if name is None:
        yield
    else:
        with jax.default_matmul_precision(name):
            yield


class _Observer:
    """Observes calls one by one and emits a ``jit_call_observed`` per call."""

    def __init__(self, ctx: ProbeContext) -> None:
        self.ctx = ctx
        self.baseline_context = trace_context_now()
        self.functions: list[Any] = []  # kept alive: ids stay unique, ordinals stable
        self.history: list[dict[str, str]] = []
        # each call's dynamic arguments' pytree structures, for a changed input pytree's cause
        self.trees: list[dict[str, Any]] = []
        # module name -> why JAX did not write its persistent cache entry (JAX's own log line)
        self.not_written: dict[str, str] = {}
        self.def_lines: list[int | None] = []
        # JAX's trace/compile events each observed call counted, per function name (a driver
        # run's summary subtracts them from the whole run's); calls past MAX_CALLS, unobserved.
        self.traces: Counter[str] = Counter()
        self.compiles: Counter[str] = Counter()
        self.beyond_limit = 0
        # The persistent cache's settings as the run set them: user code changing them (its
        # own cache directory, the cache off) explains lookups the preset did not plan.
        self.settings_at_start = persistent_settings()

    def _ordinal(self, fun: Any) -> int:
        for i, g in enumerate(self.functions):
            if g is fun:
                return i + 1
        self.functions.append(fun)
        return len(self.functions)

    def _context_text(self) -> str:
        now = trace_context_now()
        changed = [f"{k}={v}" for k, v in now.items() if self.baseline_context.get(k) != v]
        return "; ".join(changed) if changed else "as at the start of the run"

    def call(
        self,
        jitted: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        site: tuple[int, str] | None,
        memory: str | None = None,
    ) -> Any:
        if len(self.history) >= MAX_CALLS:
            self.beyond_limit += 1
            return jitted(*args, **kwargs)
        fun = jitted_fun(jitted)
        name = jitted_name(jitted)
        ordinal = self._ordinal(fun)
        code = getattr(fun, "__code__", None)
        def_line = (
            code.co_firstlineno
            if code is not None and code.co_filename == SNIPPET_FILENAME
            else None
        )
        nums, names = jitted_statics(jitted)
        trees = argument_trees(fun, args, kwargs, nums, names)
        entries = [("function", _function_text(name, ordinal, def_line))]
        entries += key_entries(fun, args, kwargs, nums, names)
        entries.append(("tracing context", self._context_text()))
        if memory is not None:
            entries.append((MEMORY_ENTRY, memory))
        index = len(self.history)
        looked_up: tuple[str, str] | None = None
        unwritten_now: str | None = None
        with self.ctx.stage("call", call_index=index):
            if persistent_cache_enabled():
                module = persistent_module_name(jitted)
                with capture_cache_keys() as keys:
                    record = observe_jit_call(jitted, args, kwargs)
                looked_up = _own_lookup(keys.logged, module)
                for message in keys.not_written:
                    if f"'{module}'" in message:
                        self.not_written.setdefault(module, message)
                        unwritten_now = message
            else:
                record = observe_jit_call(jitted, args, kwargs)
        self.traces[name] += record.trace_events
        self.compiles[name] += record.compile_events
        # The jaxpr this call traced, from the cache the call just filled (a hit: nothing new).
        jaxpr = multiline_jaxpr_view(jitted.trace(*args, **kwargs).jaxpr) if record.traced else None
        now = dict(entries)
        closest = self._closest(now)
        diff = _diff(now, self.history[closest] if closest is not None else None)
        cause = None
        if closest is not None and (record.traced or record.compile_events > 0):
            cause = _cause(diff, name, def_line, self.def_lines[closest], record.layer())
            if any(d.differs and d.name == "input pytree" for d in diff):
                cause = _structure_cause(trees, self.trees[closest]) or cause
            unwritten = self.not_written.get(persistent_module_name(jitted))
            if unwritten and record.layer() != "persistent":
                cause += f"; the disk had no entry: JAX logged {unwritten!r}"
        changed = self._settings_changed()
        if changed is not None:
            cause = f"{cause}; {changed}" if cause else changed
        self.history.append(now)
        self.trees.append(trees)
        self.def_lines.append(def_line)
        self.ctx.emit(
            JitCallObserved(
                index=index,
                function=name,
                function_object=ordinal,
                defined_line=def_line,
                source=SourceLoc(line=site[0], function=site[1]) if site else None,
                layer=record.layer(),
                cells=record.cells(),
                traced=record.traced,
                # A persistent hit still reports backend_compile_duration (the disk read).
                compiled=record.compile_events > 0 and record.layer() != "persistent",
                cpp_size_before=record.cpp_size_before,
                cpp_size_after=record.cpp_size_after,
                counters=_counters(record),
                timers_ms={k: round(v, 3) for k, v in record.timers_ms.items()},
                explanation=record.explanation,
                closest=closest,
                entries=diff,
                cause=cause,
                jaxpr=jaxpr,
                persistent_key=looked_up[1] if looked_up else None,
                persistent_lookup=looked_up[0] if looked_up else None,  # type: ignore[arg-type]
                persistent_not_written=unwritten_now,
            )
        )
        return record.out

    def _settings_changed(self) -> str | None:
        """What the user's code changed of the persistent cache's settings since the run
        started (``None``: nothing)."""
        now = persistent_settings()
        changed = [
            f"{name} = {now[name]!r} (was {was!r})"
            for name, was in self.settings_at_start.items()
            if now[name] != was
        ]
        if not changed:
            return None
        return (
            "your code changed the persistent cache's settings during the run: "
            + ", ".join(changed)
            + "; JAX's disk cache lookups follow those, not the run's"
        )

    def _closest(self, now: dict[str, str]) -> int | None:
        best: tuple[int, int] | None = None
        for i, before in enumerate(self.history):
            n = sum(1 for d in _diff(now, before) if d.differs)
            if best is None or n <= best[0]:
                best = (n, i)
        return None if best is None else best[1]


def _own_lookup(logged: list[tuple[str, str]], module: str) -> tuple[str, str] | None:
    """The (hit|miss, key) JAX logged for the call's own program (its key starts with the module
    name, ``jit_f-``; other programs compiled meanwhile are JAX's helpers)."""
    own = [(how, key) for how, key in logged if key.startswith(f"{module}-")]
    return own[-1] if own else None


def _function_text(name: str, ordinal: int, def_line: int | None) -> str:
    where = f", defined at line {def_line}" if def_line is not None else ""
    return f"{name} (function object #{ordinal}{where})"


def _diff(now: dict[str, str], before: dict[str, str] | None) -> list[KeyEntryDiff]:
    if before is None:
        return [KeyEntryDiff(name=k, now=v) for k, v in now.items()]
    out = [
        KeyEntryDiff(name=k, now=v, before=before.get(k), differs=before.get(k) != v)
        for k, v in now.items()
    ]
    out += [
        KeyEntryDiff(name=k, now="(absent)", before=v, differs=True)
        for k, v in before.items()
        if k not in now
    ]
    return out


def _cause(
    diff: list[KeyEntryDiff],
    name: str,
    def_line: int | None,
    before_line: int | None,
    layer: str = "compile",
) -> str:
    differing = [d for d in diff if d.differs]
    if [d.name for d in differing] == [MEMORY_ENTRY]:
        then = (
            "the executable was read from the persistent cache on disk, not compiled"
            if layer == "persistent"
            else "XLA compiled it again"
        )
        return (
            "JAX's in-memory caches were empty (jax.clear_caches(), as in a new process), so "
            f"{name} was traced and lowered again; {then}"
        )
    fun = next((d for d in differing if d.name == "function"), None)
    if fun is not None and def_line is not None and def_line == before_line:
        return (
            f"new function object at the same call site ({SNIPPET_FILENAME}:{def_line}): "
            f"{name} is re-created every call, so its cache entry is never reused"
        )
    if not differing:
        return "no key entry differs from the closest earlier call, yet JAX missed its cache"
    return "; ".join(f"{d.name}: now {d.now}, before {d.before}" for d in differing)


def _structure_cause(now: dict[str, Any], before: dict[str, Any]) -> str | None:
    """The input pytree's change in JAX's words, down to the object that is not equal (an NNX
    GraphDef's static attribute, such as an optax transformation rebuilt each epoch), with the
    fix; None when no argument present in both calls changed structure."""
    for name, tree in now.items():
        if name in before:
            change = structure_change(name, tree, before[name])
            if change is not None:
                return f"{change.text()}. Fix: {change.fix()}" if change.inside else change.text()
    return None


def _counters(record: JitCallRecord) -> list[CacheCounterView]:
    return [
        CacheCounterView(
            name=name,
            source=COUNTED_CACHES[name][1],
            hits_before=record.before[name][0],
            hits_after=record.after[name][0],
            misses_before=record.before[name][1],
            misses_after=record.after[name][1],
        )
        for name in COUNTED_CACHES
    ]


def run(ctx: ProbeContext) -> None:
    """Reset JAX's caches, then observe each jit call (calls, preset or driver mode)."""
    snippet = ctx.snippet
    preset = options_as(ctx.options, CachesOptions).preset
    calls = snippet.namespace.get("calls")
    mode: Literal["calls", "driver"] = (
        "calls" if preset is not None or calls is not None else "driver"
    )
    with contextlib.ExitStack() as stack:
        directory = None
        if preset == "persistent":
            # A fresh directory under the same relative name every run (JAX hashes the cache
            # directory's path into the key), removed after the run; the settings come back.
            relative = stack.enter_context(clean_cache_dir())
            stack.enter_context(persistent_cache(relative))
            directory = os.path.abspath(relative)
        cleared = reset_caches()
        ctx.emit(
            CachesReset(
                mode=mode,
                cleared=cleared,
                persistent_enabled=persistent_cache_enabled(),
                persistent_dir=directory,
            )
        )
        _observe(ctx, mode, preset, calls)


def _call_line(source: str, number: int) -> int | None:
    """The line of call ``number`` (from 1) of the snippet's ``calls``: its own line where
    ``calls`` is a list or tuple written out (one call a line, as a long list is written),
    else the line that sets ``calls``."""
    import ast

    line = setting_line(source, "calls")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return line
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and stmt.lineno == line
            and [t.id for t in stmt.targets if isinstance(t, ast.Name)] == ["calls"]
            and isinstance(stmt.value, ast.List | ast.Tuple)
            and not any(isinstance(e, ast.Starred) for e in stmt.value.elts)
            and number <= len(stmt.value.elts)
        ):
            return stmt.value.elts[number - 1].lineno
    return line


def _observe(
    ctx: ProbeContext, mode: Literal["calls", "driver"], preset: str | None, calls: Any
) -> None:
    snippet = ctx.snippet
    observer = _Observer(ctx)
    if mode == "driver":
        namespace = getattr(snippet.f, "__globals__", snippet.namespace)
        with watching_jit_calls(namespace, observer.call, snippet.source) as watch:
            with ctx.stage("run"):
                snippet.f(*snippet.args, **snippet.kwargs)
        ctx.emit(
            driver_summary(
                watch,
                observer.traces,
                observer.compiles,
                len(observer.history),
                observer.beyond_limit,
            )
        )
        return
    jitted = (
        snippet.f
        if is_jitted(snippet.f)
        else jax.jit(
            snippet.f,
            static_argnums=snippet.static_argnums,
            static_argnames=snippet.static_argnames,
        )
    )
    if preset is not None:
        in_axes = snippet.namespace.get("in_axes")
        planned = _preset_calls(
            preset, jitted, snippet.args, snippet.kwargs, in_axes, snippet.source
        )
    else:
        if not isinstance(calls, (list, tuple)):
            raise blame_line(
                InvalidSnippet(
                    f"`calls` must be a list of argument tuples, got {type(calls).__name__}"
                ),
                setting_line(snippet.source, "calls"),
            )
        planned = []
        for c in list(calls)[:MAX_CALLS]:
            planned.append(
                PlannedCall(
                    jitted, tuple(c) if isinstance(c, (list, tuple)) else (c,), snippet.kwargs
                )
            )
    for number, p in enumerate(planned, 1):
        if p.memory == MEMORY_CLEARED:
            reset_caches()
        # A donating jit deletes its input arrays: each preset call gets its own copies (same
        # avals, same placement), as a loop that makes fresh inputs would. The snippet's own
        # `calls` are made as listed, as a plain script makes them: an array that one call
        # donated and a later one passes again fails there, as in a fresh process (issue 33).
        args = _copies(p.args) if preset is not None and jitted_donates(p.jitted) else p.args
        with _context(p.context):
            try:
                observer.call(p.jitted, args, p.kwargs, None, p.memory)
            except Exception as exc:
                if p.changed is None:
                    if preset is None:
                        # A call the snippet listed: when JAX refused its arguments before f
                        # ran (a donated buffer passed again), no frame of the snippet is on
                        # the traceback; the line at fault is the `calls` line, not f's `def`.
                        # A frame of the snippet (f raised) still wins.
                        blame_line(
                            mark_during(exc, f"in call {number} of your `calls`"),
                            _call_line(snippet.source, number),
                        )
                    raise
                # The preset made these arguments, not the snippet: say so beside JAX's error.
                explain(
                    mark_during(
                        exc,
                        f"in call {number}, made by the {p.changed} preset from your args, "
                        "not by your snippet",
                    ),
                    f"This call is the {p.changed} preset's ({PRESETS[p.changed]}), not one your "
                    "snippet makes: f does not accept the arguments the preset made. Pick another "
                    "preset, or list the calls you want in `calls`.",
                )
                raise


# This probe calls the snippet's f as it is (its loop runs as a script runs it): the runner's
# plain call of an f that donates inside (design 0060) would only run the loop twice.
CALLS_F_AS_IS = True
