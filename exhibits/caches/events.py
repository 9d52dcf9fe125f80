"""The caches exhibit's events: ``caches_reset``, ``jit_call_observed`` (one jitted call, the
cache layer that answered it and what JAX keyed it on) and, in driver mode, ``driver_run_summary``
(JAX's work the calls shown do not account for, and a note when no call was observed).

``KeyEntryDiff`` (one entry of a jit cache key, now and before) is also carried by the
recompile_hunt exhibit's ``training_step_observed``, which imports it from here (the caches
exhibit owns it; a dependency one way, no cycle).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, JaxprView, SourceLoc, WireModel


class KeyEntryDiff(WireModel):
    """One entry of what JAX keyed a jit call on (``args[0]`` aval, a static argument, the
    function's identity, a sharding, the tracing context), here and in the closest earlier call;
    ``differs`` marks the entries that changed."""

    name: str
    now: str
    before: str | None = None
    differs: bool = False


class CacheCounterView(WireModel):
    """One of JAX's Python-level caches (a ``weakref_lru_cache``) read with ``cache_info()``
    right before and right after a call; ``source`` names where JAX defines it."""

    name: str
    source: str
    hits_before: int
    hits_after: int
    misses_before: int
    misses_after: int


CacheLayer = Literal["cpp", "jaxpr", "lowering", "executable", "persistent", "compile"]


CacheCell = Literal["hit", "miss", "skipped", "off"]


class CachesReset(EventBase):
    """The caches exhibit starts from a clean cache state: what it cleared, how the snippet is
    run (``calls``: ``jit(f)`` on each tuple of ``calls``; ``driver``: ``f(*args)`` itself calls
    jitted functions, each observed), and whether the persistent cache is in use
    (``persistent_dir``: the directory, when the run itself turned it on: the ``persistent``
    preset uses a new temporary one)."""

    type: Literal["caches_reset"] = "caches_reset"
    mode: Literal["calls", "driver"]
    cleared: list[str]
    persistent_enabled: bool = False
    persistent_dir: str | None = None


class JitCallObserved(EventBase):
    """One call of a jitted function, with the cache layer that answered it (``layer``; see
    ``internals/cache_layers.py``), per layer ``hit``/``miss``/``skipped``/``off`` (``cells``,
    keys ``cpp``, ``jaxpr``, ``lowering``, ``executable``, ``persistent``), JAX's own counters
    before and after, the C++ cache size before/after (``jitted._cache_size()``), the
    ``jax.monitoring`` timers (ms, keys ``trace``/``lower``/``compile``), JAX's explain-cache-miss
    text, and the structured diff against the closest earlier call (``closest``: its index).
    ``function_object``: 1 for the first function object seen in the run, 2 for the next...
    ``defined_line``: the line where the function is defined (in the snippet). ``source``: the
    snippet line that made the call (driver mode). ``cause``: why it traced or compiled again,
    from the diff (``None`` for a call with nothing earlier to compare with, or no new work).
    ``jaxpr``: for a call that traced, the jaxpr JAX traced (``jitted.trace(*args).jaxpr``,
    read after the call from the cache the call filled). ``persistent_key``: with the persistent
    cache on, the key JAX looked up on disk for this call's own program (``jit_<name>-<sha256>``,
    as ``jax._src.compiler`` logs it; the file is ``<key>-cache`` in the cache directory), and
    ``persistent_lookup`` whether that lookup hit or missed; ``None`` when not consulted."""

    type: Literal["jit_call_observed"] = "jit_call_observed"
    index: int
    function: str
    function_object: int = 1
    defined_line: int | None = None
    source: SourceLoc | None = None
    layer: CacheLayer
    cells: dict[str, CacheCell] = {}
    traced: bool = False
    compiled: bool = False
    cpp_size_before: int = 0
    cpp_size_after: int = 0
    counters: list[CacheCounterView] = []
    timers_ms: dict[str, float] = {}
    explanation: str = ""
    closest: int | None = None
    entries: list[KeyEntryDiff] = []
    cause: str | None = None
    jaxpr: JaxprView | None = None
    persistent_key: str | None = None
    persistent_lookup: Literal["hit", "miss"] | None = None
    # After a miss: why JAX did not write this program to the disk cache, as it logs it
    # (``compiler._cache_write``: host callbacks, under the size or compile-time threshold).
    persistent_not_written: str | None = None


class WorkOutsideCalls(WireModel):
    """JAX's traces and compiles of one snippet function (``function``: its name, as JAX's
    ``jax_log_compiles`` lines give it) in a driver run, in all (``traces_total``,
    ``compiles_total``: every ``Finished tracing <function> for jit`` / ``Finished XLA compilation
    of jit(<function>)``) and outside the calls the timeline shows (``traces``, ``compiles``)."""

    function: str
    traces: int
    compiles: int
    traces_total: int
    compiles_total: int


class TransformedCallView(WireModel):
    """A jitted function of the snippet called with tracers outside any observed call:
    ``how`` names the transformation (``jax.vmap``, autodiff...), ``line`` the snippet line,
    ``count`` how many such calls."""

    function: str
    how: str
    line: int | None = None
    count: int = 1


class DriverRunSummary(EventBase):
    """After a driver run (``f(*args)`` as plain Python): how many jit calls were observed
    (``observed_calls``), how many jit objects of the snippet were watched (``watched_jits``),
    JAX's work per function that no observed call accounts for (``outside``: e.g. ``jax.vmap(g)``
    on a jitted ``g`` compiles a batched ``jit(g)``), the transformed calls seen
    (``transformed``), the calls past the exhibit's limit (``beyond_limit``, run but not shown),
    and ``note``: in plain words, why the timeline is empty or incomplete and what to try
    (``None`` when the timeline shows all of it)."""

    type: Literal["driver_run_summary"] = "driver_run_summary"
    observed_calls: int
    watched_jits: int
    outside: list[WorkOutsideCalls] = []
    transformed: list[TransformedCallView] = []
    beyond_limit: int = 0
    note: str | None = None


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    CachesReset,
    JitCallObserved,
    DriverRunSummary,
)
