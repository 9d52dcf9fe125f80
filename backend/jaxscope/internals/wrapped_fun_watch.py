"""``jax._src.linear_util``'s ``WrappedFun`` stacks observed while a snippet runs (jax 0.10.2), for
the wrapped_fun exhibit.

A ``WrappedFun`` is a function ``f`` plus ``transforms``: ``(gen, static_args)`` pairs, outermost
(last applied) first. ``WrappedFun.wrap`` pushes one pair and its write-once ``Store`` (``None``
for a transformation without auxiliary output) and builds ``f_transformed`` as
``functools.partial(gen, <the previous f_transformed>, [store,] *static_args)``, so
``call_wrapped`` enters the last-applied generator first, each generator calls the next inner
one, the innermost calls ``f``, and results come back through the first-applied generator first.
A ``transformation_with_aux2`` generator fills its store (``Store.store``) on the way out.

:func:`watching` wraps, for the block, ``WrappedFun.__init__`` (every ``WrappedFun`` built, so
``lu.wrap_init`` too), ``WrappedFun.wrap`` (each push), ``WrappedFun.call_wrapped`` (each entry
of a stack) and ``Store.store`` (each fill; ``EqualStore`` stores through a ``Store``), and
records those around a *core* function the caller picks (the snippet's functions). While a
watched stack runs, a ``sys.setprofile`` function restricted to that stack's generator frames
(matched by code object and by the exact ``partial`` each frame was handed) records the real
enter/leave order; the profiler that was set before is called from it and put back after.

In 0.10.2 ``jit``, ``grad``, ``jvp``, ``vjp``, ``linearize``, ``make_jaxpr``, ``eval_shape`` and
``checkpoint`` build no ``WrappedFun`` around the user's function (they trace it through
``pe.trace_to_jaxpr`` with ``FlatTree``); ``vmap``, ``custom_vjp``/``custom_jvp`` and
``linear_transpose`` do. :attr:`Watch.built_around` counts every ``WrappedFun`` constructed around
a core function, so that zero is an observation, not an assumption.

Every private name used here is pinned by ``backend/tests/test_internals_contract_wrapped_fun.py``.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from jax._src import linear_util as lu

from jaxscope.internals.jit_watch import user_call_site
from jaxscope.internals.patching import patched

# Class-level patches of linear_util must not interleave between threads.
PATCH_LOCK = threading.RLock()

StepEvent = Literal["enter", "leave", "fill"]


def snippet_line() -> int | None:
    """The line of the innermost snippet frame on the current Python stack."""
    site = user_call_site()
    return site[0] if site is not None else None


def core_code(fun: Any) -> types.CodeType | None:
    """The code object of ``fun`` once unwrapped (``jax.jit``'s ``__wrapped__``); None for a
    callable without Python code."""
    try:
        fun = inspect.unwrap(fun)
    except ValueError:  # a __wrapped__ cycle
        return None
    code = getattr(fun, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


@dataclass
class Transform:
    """One pushed transformation: the generator ``gen`` (``name`` its ``__name__``, ``module``
    its module), its static args by the generator's parameter names (``params``, in order), and
    the ``Store``/``EqualStore`` its auxiliary output goes to (``store``; None: it has none).
    ``push``: the order of the push among all the watched pushes (application order, from 0;
    None for a pair pushed before the watch began)."""

    gen: Callable[..., Any]
    name: str
    module: str
    params: tuple[tuple[str, Any], ...]
    store: Any
    push: int | None
    built_line: int | None


@dataclass
class Stack:
    """The transformations around one core function, outermost (last applied) first: the
    ``transforms`` of the longest ``WrappedFun`` built from one ``lu.wrap_init``. ``core`` is the
    function wrapped, ``core_source`` the ``debug_info.func_src_info`` JAX gave it (``f at
    <snippet>:3``). ``entered``: how often ``call_wrapped`` ran it; ``entered_line``: the snippet
    line on the Python stack at the first entry (None: no snippet frame, e.g. the probe's own
    transform call or a backward pass)."""

    index: int
    core: Any
    core_name: str
    core_source: str | None
    transforms: list[Transform]
    entered: int = 0
    entered_line: int | None = None


@dataclass
class Step:
    """One event of the timeline, in the order it happened: ``enter``/``leave`` of transform
    ``position`` of stack ``stack`` (``position`` None: the core function itself), or ``fill``
    of that transform's store (``value`` what was stored, ``filler`` the code name of the frame
    that called ``store``)."""

    event: StepEvent
    stack: int
    position: int | None
    name: str
    value: Any = None
    filler: str | None = None


@dataclass
class _Node:
    """A watched ``WrappedFun``'s transforms, by the identity of its ``(gen, args)`` pairs."""

    core: Any
    core_source: str | None
    pairs: tuple[Any, ...]
    stores: tuple[Any, ...]
    stack: Stack | None = None

    @property
    def pair_ids(self) -> tuple[int, ...]:
        return tuple(id(p) for p in self.pairs)


@dataclass
class Watch:
    """What :func:`watching` saw. ``built_around``: ``WrappedFun`` objects constructed around a
    core function (``wrap_init``, each ``wrap``, copies by ``annotate``/``replace_debug_info``);
    ``built_other``: those around any other function (JAX's own, such as ``jaxpr_as_fun``)."""

    is_core: Callable[[Any], bool]
    stacks: list[Stack] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    built_around: int = 0
    built_other: int = 0
    pushes: list[Transform] = field(default_factory=list)
    _nodes: dict[tuple[int, tuple[int, ...]], _Node] = field(default_factory=dict)
    _transforms: dict[int, Transform] = field(default_factory=dict)
    _keep: list[Any] = field(default_factory=list)
    _store_owner: dict[int, Transform] = field(default_factory=dict)

    def transform_of(self, pair: Any, store: Any, push: int | None = None) -> Transform:
        """The :class:`Transform` of a ``(gen, static_args)`` pair (made once per pair)."""
        found = self._transforms.get(id(pair))
        if found is not None:
            return found
        gen, static = pair
        t = Transform(
            gen=gen,
            name=getattr(gen, "__name__", repr(gen)),
            module=getattr(gen, "__module__", "") or "",
            params=static_params(gen, tuple(static), store is not None),
            store=store,
            push=push,
            built_line=snippet_line(),
        )
        self._transforms[id(pair)] = t
        self._keep.append(pair)  # ids stay unique while the watch holds the pair
        if store is not None:
            self._store_owner[id(inner_store(store))] = t
        return t

    def node_of(self, wf: Any) -> _Node | None:
        """The record of a watched ``WrappedFun`` (None: not around a core function)."""
        key = (id(wf.f), tuple(id(p) for p in wf.transforms))
        return self._nodes.get(key)

    def note_built(self, wf: Any) -> None:
        if not self.is_core(wf.f):
            self.built_other += 1
            return
        self.built_around += 1
        key = (id(wf.f), tuple(id(p) for p in wf.transforms))
        if key not in self._nodes:
            dbg = wf.debug_info
            self._nodes[key] = _Node(
                core=wf.f,
                core_source=getattr(dbg, "func_src_info", None),
                pairs=tuple(wf.transforms),
                stores=tuple(wf.stores),
            )
            self._keep.append(wf)

    def stack_of(self, node: _Node) -> Stack:
        """The :class:`Stack` of ``node``, numbered in the order stacks are first seen."""
        if node.stack is None:
            transforms = [
                self.transform_of(p, s) for p, s in zip(node.pairs, node.stores, strict=True)
            ]
            node.stack = Stack(
                index=len(self.stacks),
                core=node.core,
                core_name=getattr(node.core, "__name__", repr(node.core)),
                core_source=node.core_source,
                transforms=transforms,
            )
            self.stacks.append(node.stack)
        return node.stack

    def finish(self) -> None:
        """Number the stacks built but never entered: each longest chain of pushes (a node whose
        pairs no other node extends) that is not entered yet, in the order they were built."""
        nodes = list(self._nodes.values())
        extended = {(id(n.core), n.pair_ids[1:]) for n in nodes if n.pairs}
        for node in nodes:
            if node.stack is None and node.pairs and (id(node.core), node.pair_ids) not in extended:
                self.stack_of(node)

    def fill_owner(self, store: Any) -> Transform | None:
        return self._store_owner.get(id(store))


def inner_store(store: Any) -> Any:
    """The ``lu.Store`` that holds a value: an ``EqualStore`` keeps one in ``_store``."""
    return store._store if isinstance(store, lu.EqualStore) else store


def static_params(
    gen: Callable[..., Any], static: tuple[Any, ...], has_store: bool
) -> tuple[tuple[str, Any], ...]:
    """``static`` by the generator's parameter names: a generator takes ``f``, its store when it
    has one, then the static args, then the dynamic ones (``linear_util``'s module docstring)."""
    try:
        names = list(inspect.signature(gen).parameters)
    except (TypeError, ValueError):
        names = []
    skip = 2 if has_store else 1
    given = names[skip : skip + len(static)]
    given += [f"arg{i}" for i in range(len(given), len(static))]
    return tuple(zip(given, static, strict=True))


def partial_chain(wf: Any) -> list[Any] | None:
    """``wf.f_transformed`` unrolled: the ``partial`` of each transform, outermost first, then
    the core's ``partial``; None when it is not such a chain (a changed ``linear_util``)."""
    chain = [wf.f_transformed]
    for gen, _ in wf.transforms:
        p = chain[-1]
        if not isinstance(p, functools.partial) or p.func is not gen or not p.args:
            return None
        chain.append(p.args[0])
    return chain


class _Profiler:
    """The ``sys.setprofile`` function while watched stacks run: records the enter and leave of
    the generator frames handed exactly the ``partial``s of an entered stack, and of the core
    function's first frame while that stack's innermost generator is the last frame entered.
    Calls the previous profiler first."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.previous: Any = None
        self.depth = 0
        # id(partial a generator frame is handed as its f) -> (stack, position)
        self.expected: dict[int, tuple[Stack, int]] = {}
        self.gen_codes: dict[types.CodeType, int] = {}
        self.core_codes: dict[types.CodeType, int] = {}
        # id(frame) -> (stack, position) for the frames entered and not yet left
        self.active: dict[int, tuple[Stack, int | None]] = {}
        # the ids of those frames in the order they were entered
        self.open: list[int] = []

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if self.previous is not None:
            self.previous(frame, event, arg)
        if event == "call":
            code = frame.f_code
            if code in self.gen_codes:
                first = frame.f_locals.get(code.co_varnames[0]) if code.co_varnames else None
                expected = self.expected.get(id(first))
                if expected is not None:
                    stack, pos = expected
                    self.active[id(frame)] = expected
                    self.open.append(id(frame))
                    self.watch.steps.append(
                        Step("enter", stack.index, pos, stack.transforms[pos].name)
                    )
            elif code in self.core_codes and self.open:
                # the core runs while its stack's innermost generator is the last frame
                # entered: called by it directly, or through jit's tracing for a jitted core
                outer = self.active[self.open[-1]]
                if outer[1] == len(outer[0].transforms) - 1:
                    stack = outer[0]
                    self.active[id(frame)] = (stack, None)
                    self.open.append(id(frame))
                    self.watch.steps.append(Step("enter", stack.index, None, stack.core_name))
        elif event == "return":
            left = self.active.pop(id(frame), None)
            if left is not None:
                self.open.remove(id(frame))
                stack, at = left
                name = stack.core_name if at is None else stack.transforms[at].name
                self.watch.steps.append(Step("leave", stack.index, at, name))

    @staticmethod
    def _count(table: dict[types.CodeType, int], code: types.CodeType | None, n: int) -> None:
        if code is None:
            return
        table[code] = table.get(code, 0) + n
        if table[code] <= 0:
            del table[code]

    def register(self, stack: Stack, chain: list[Any]) -> list[int]:
        """Expect ``stack``'s generator frames (handed ``chain[i + 1]``); returns the keys to
        drop from :attr:`expected` when the entry ends."""
        keys = []
        for pos, t in enumerate(stack.transforms):
            key = id(chain[pos + 1])
            self.expected[key] = (stack, pos)
            keys.append(key)
            self._count(self.gen_codes, core_code(t.gen), 1)
        core = chain[-1].func if isinstance(chain[-1], functools.partial) else chain[-1]
        self._count(self.core_codes, core_code(core), 1)
        return keys

    def unregister(self, stack: Stack, chain: list[Any], keys: list[int]) -> None:
        for key in keys:
            self.expected.pop(key, None)
        for t in stack.transforms:
            self._count(self.gen_codes, core_code(t.gen), -1)
        core = chain[-1].func if isinstance(chain[-1], functools.partial) else chain[-1]
        self._count(self.core_codes, core_code(core), -1)

    @contextmanager
    def running(self, stack: Stack, chain: list[Any] | None) -> Iterator[None]:
        """Profile for the duration of one ``call_wrapped`` of ``stack`` (nested entries share
        the one profiler; the previous one is put back when the outermost ends)."""
        if chain is None:  # not a partial chain: no order to record (the contract test fails)
            yield
            return
        keys = self.register(stack, chain)
        if self.depth == 0:
            self.previous = sys.getprofile()
            sys.setprofile(self)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.depth == 0:
                sys.setprofile(self.previous)
                self.previous = None
            self.unregister(stack, chain, keys)


@contextmanager
def watching(is_core: Callable[[Any], bool]) -> Iterator[Watch]:
    """Record, for the block, every ``WrappedFun`` built around a function ``is_core`` accepts:
    the pushes, the stacks entered (with the real enter/leave order) and the store fills. The
    four patched attributes and the profiler are put back on exit, also when the block raises."""
    watch = Watch(is_core=is_core)
    profiler = _Profiler(watch)
    wf_cls: Any = lu.WrappedFun
    original_init = wf_cls.__init__
    original_wrap = wf_cls.wrap
    original_call = wf_cls.call_wrapped
    original_store = lu.Store.store

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        watch.note_built(self)

    def wrap(self: Any, gen: Any, gen_static_args: Any, out_store: Any) -> Any:
        new = original_wrap(self, gen, gen_static_args, out_store)
        if watch.is_core(self.f):
            t = watch.transform_of(new.transforms[0], out_store, push=len(watch.pushes))
            watch.pushes.append(t)
        return new

    def call_wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        node = watch.node_of(self)
        if node is None or not node.pairs:
            return original_call(self, *args, **kwargs)
        stack = watch.stack_of(node)
        stack.entered += 1
        if stack.entered == 1:
            stack.entered_line = snippet_line()
        with profiler.running(stack, partial_chain(self)):
            return original_call(self, *args, **kwargs)

    def store(self: Any, val: Any) -> None:
        original_store(self, val)  # raises on an occupied store, before anything is recorded
        owner = watch.fill_owner(self)
        if owner is None:
            return
        filler = _filler_name()
        for stack in watch.stacks:
            for pos, t in enumerate(stack.transforms):
                if t is owner:
                    watch.steps.append(Step("fill", stack.index, pos, t.name, val, filler))
                    return
        # a store of a stack not entered (filled by populate_stores from a cache): stack -1
        watch.steps.append(Step("fill", -1, None, owner.name, val, filler))

    with (
        PATCH_LOCK,
        patched(wf_cls, __init__=__init__, wrap=wrap, call_wrapped=call_wrapped),
        patched(lu.Store, store=store),
    ):
        try:
            yield watch
        finally:
            watch.finish()


def _filler_name() -> str:
    """The code name of the frame that called ``Store.store`` (past ``EqualStore.store`` and
    this module's wrapper)."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code in (lu.EqualStore.store.__code__,):
        frame = frame.f_back
    return frame.f_code.co_name if frame is not None else "?"


def write_once_text(store: Any) -> str:
    """What JAX says when a store is written or read against its rule, on the real object:
    a filled ``Store`` refuses a second value (``StoreException: Store occupied``); an
    ``EqualStore`` refuses one that is not equal (``Store occupied with not-equal value``); an
    empty one refuses to be read (``Store empty``). Nothing is changed: JAX raises first."""
    filled = bool(inner_store(store))
    try:
        if filled:
            store.store(object())
        else:
            _ = store.val
    except lu.StoreException as exc:
        return f"StoreException: {exc}"
    return "no StoreException"  # the contract test fails on this text


def store_value(store: Any) -> tuple[bool, Any]:
    """``(filled, value)`` of a ``Store``/``EqualStore`` (value None when empty)."""
    inner = inner_store(store)
    return (True, inner.val) if bool(inner) else (False, None)


def store_kind(store: Any) -> str | None:
    """``Store``, ``EqualStore``, or None for a transformation without a store."""
    if store is None:
        return None
    return "EqualStore" if isinstance(store, lu.EqualStore) else "Store"


@dataclass
class CallerFrame:
    """One frame of JAX's own code on the way to a core function: its function name, its file
    relative to ``site-packages`` (``jax/_src/pjit.py``) and line."""

    function: str
    file: str
    line: int


# JAX's traceback filter re-raises through this frame on every public API call: not a caller.
_SKIPPED_CALLERS = frozenset({"reraise_with_filtered_traceback"})
MAX_CALLER_FRAMES = 6


def _caller_frames(frame: types.FrameType | None) -> list[CallerFrame]:
    """The frames of library code from ``frame`` outwards, up to the first snippet frame or the
    first frame outside ``site-packages`` (the probe)."""
    out: list[CallerFrame] = []
    while frame is not None and len(out) < MAX_CALLER_FRAMES:
        filename = frame.f_code.co_filename
        if "site-packages/" not in filename or "/jaxscope/" in filename:
            break
        if frame.f_code.co_name not in _SKIPPED_CALLERS:
            out.append(
                CallerFrame(
                    frame.f_code.co_name, filename.split("site-packages/")[-1], frame.f_lineno
                )
            )
        frame = frame.f_back
    return out


@contextmanager
def first_callers(codes: set[types.CodeType]) -> Iterator[dict[types.CodeType, list[CallerFrame]]]:
    """For the block, the JAX frames that first called each code object in ``codes`` (the
    snippet's functions), innermost first: what traces ``f`` when no ``WrappedFun`` does. A
    ``sys.setprofile`` function that looks only at Python ``call`` events of those codes; the
    previous profiler is called from it and put back on exit."""
    found: dict[types.CodeType, list[CallerFrame]] = {}
    previous: Any = sys.getprofile()

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        if previous is not None:
            previous(frame, event, arg)
        if event == "call" and frame.f_code in codes and frame.f_code not in found:
            found[frame.f_code] = _caller_frames(frame.f_back)

    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(previous)
