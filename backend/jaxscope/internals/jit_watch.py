"""Watch a driver's jit calls (the ``caches`` exhibit's driver mode): every ``jax.jit`` object of
the snippet that the user's code can reach is swapped, for the run, for a proxy that reports each
call from outside a trace; and JAX's own trace/compile events of the snippet's functions are
counted for the whole run, so work that no watched call accounts for is known.

Reachable, as users write them (``docs/design/0016-cache-layers.md``): the snippet's globals; the
dicts and lists there (nested a few levels) and tuples of jits (a new tuple takes the slot);
classes defined in the snippet (a method decorated ``@partial(jax.jit, static_argnums=0)`` is a
jit object in the class ``__dict__``; the proxy binds to an instance as the jit object does);
instances of those classes in the globals (a jit stored in ``self.step``); the closure cells of
the snippet's functions; and every ``jax.jit`` made while ``f`` runs (``jax.jit``, a ``jit``
bound to it, a ``partial(jax.jit, ...)`` in the globals). Not reached: default argument values,
other objects' attributes, jits made before the run by code outside the snippet.

JAX's work outside the watched calls is real: ``jax.vmap(g)(xs)`` and ``jax.grad(...g...)(x)`` on
a jitted ``g``, called eagerly, compile batched and differentiated variants of ``jit(g)`` (JAX logs
each as ``Finished XLA compilation of jit(g)``) without calling the jit object with arrays. The
proxy sees those calls with tracer arguments (``BatchTracer``, ``JVPTracer``...) and records them
(:class:`TransformedCall`); :class:`JitWatch` counts JAX's ``jaxpr_trace_duration`` and
``backend_compile_duration`` events per function name (the same context manager writes the
``jax_log_compiles`` line, ``jax._src.dispatch.log_elapsed_time``), so the caller can say how many
traces and compiles happened outside the calls it shows.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.monitoring
from jax._src import util as jax_util

from jaxscope.internals.monitoring import COMPILE_EVENT, TRACE_EVENT
from jaxscope.snippet_model import SNIPPET_FILENAME

_PJIT_TYPE = type(jax.jit(lambda x: x))

# How deep the walk from the snippet's globals goes (a dict of dicts of jits; a class's
# attribute holding a dict); deeper stores are not watched.
MAX_DEPTH = 4

# The trace a tracer argument belongs to, in the words of the transformation that made it.
TRANSFORMATIONS = {
    "BatchTracer": "jax.vmap",
    "JVPTracer": "jax.grad / jax.jvp (autodiff)",
    "LinearizeTracer": "jax.grad / jax.linearize (autodiff)",
    "JaxprTracer": "jax.grad / jax.linearize (autodiff, partial evaluation)",
    "DynamicJaxprTracer": "the trace of another function (a jit the exhibit does not watch, "
    "lax control flow, jax.make_jaxpr)",
}


def is_jitted(obj: Any) -> bool:
    """``obj`` is a ``jax.jit`` object (``jaxlib`` ``PjitFunction``)."""
    return isinstance(obj, _PJIT_TYPE)


def jitted_fun(jitted: Any) -> Callable[..., Any]:
    """The Python function a jit object wraps (``jitted._fun``)."""
    fun: Callable[..., Any] = jitted._fun
    return fun


def user_call_site() -> tuple[int, str] | None:
    """``(line, function)`` of the innermost snippet frame on the stack (the call site)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            return frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def python_function(fun: Any) -> Any:
    """The user's Python function under ``fun``, for every kind of callable ``jax.jit`` takes: a
    function (through ``__wrapped__``: ``jax.grad(loss)``, Flax NNX's ``JitFn``), a bound method
    (``__func__``), a ``functools.partial`` (``func``), a callable object (its class's
    ``__call__``: an ``nnx.Module`` instance)."""
    for _ in range(16):
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif isinstance(fun, types.MethodType):
            fun = fun.__func__
        elif getattr(fun, "__wrapped__", None) is not None:
            # before the function itself: jax.value_and_grad(loss) is a function of JAX's
            # that wraps the user's (functools.wraps), as inspect.unwrap reads it
            fun = fun.__wrapped__
        elif isinstance(fun, types.FunctionType):
            return fun
        elif callable(fun) and not isinstance(fun, type):
            call = vars(type(fun)).get("__call__") or type(fun).__call__
            if call is fun:
                return fun
            fun = call
        else:
            return fun
    return fun


def _from_snippet(fun: Any) -> bool:
    code = getattr(python_function(fun), "__code__", None)
    return code is not None and code.co_filename == SNIPPET_FILENAME


def _user_object(fun: Any) -> bool:
    """A callable object (not a function) made outside JAX and numpy: a module instance such as
    an ``nnx.Linear``, whose jit (``jax.jit(model)``) the user's code made."""
    if isinstance(fun, (types.FunctionType, types.MethodType, functools.partial, type)):
        return False
    if getattr(fun, "__wrapped__", None) is not None:
        return False
    module = (getattr(type(fun), "__module__", "") or "").split(".")[0]
    return callable(fun) and module not in ("jax", "jaxlib", "numpy", "builtins")


def _jax_name(fun: Any) -> str:
    """The name JAX's events give a jit of ``fun`` (``util.fun_name``: ``<unnamed function>``
    for a callable object without ``__name__``)."""
    return str(jax_util.fun_name(fun))


def _flax_jit_wrapper(value: Any) -> bool:
    """A Flax NNX transform object (``nnx.jit``'s ``JitWrapped``) holding its ``jax.jit`` object
    in ``jitted_fn``: made when the snippet is loaded, so the jit object is reached through it."""
    module = getattr(type(value), "__module__", "") or ""
    return module.startswith("flax.") and is_jitted(getattr(value, "jitted_fn", None))


def _tracer_kind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The class name of the first tracer among the arguments' leaves (None: no tracer)."""
    for x in jax.tree.leaves((args, kwargs)):
        if isinstance(x, jax.core.Tracer):
            return type(x).__name__
    return None


def snippet_function_names(source: str) -> set[str]:
    """The names of every function the snippet defines (``def``, ``lambda`` as ``<lambda>``, at
    any depth): the names JAX's events carry for jits of the snippet's functions."""
    try:
        top = compile(source, SNIPPET_FILENAME, "exec")
    except SyntaxError:
        return set()
    names: set[str] = set()
    todo = [top]
    while todo:
        code = todo.pop()
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names.add(const.co_name)
                todo.append(const)
    return names


OnCall = Callable[[Any, tuple[Any, ...], dict[str, Any], "tuple[int, str] | None"], Any]


@dataclass(frozen=True)
class TransformedCall:
    """A watched jit object called with tracers outside any observed call: ``jax.vmap(g)``,
    ``jax.grad`` of a function calling ``g``, run eagerly. ``how``: the transformation
    (:data:`TRANSFORMATIONS`); ``line``: the snippet line that made the call."""

    function: str
    how: str
    line: int | None


@dataclass
class JitWatch:
    """What a driver run did beyond the calls reported to ``on_call``: ``watched`` jit objects
    (reachable at the start, or made during the run), ``transformed`` calls with tracers outside
    an observed call, and JAX's trace and compile events per snippet function name for the
    whole run (``traces``: ``jaxpr_trace_duration``; ``compiles``: ``backend_compile_duration``
    of ``jit(<name>)``)."""

    names: set[str]
    watched: int = 0
    transformed: list[TransformedCall] = field(default_factory=list)
    traces: Counter[str] = field(default_factory=Counter)
    compiles: Counter[str] = field(default_factory=Counter)
    depth: int = 0  # > 0 while an observed call runs
    # (function name, snippet line) of each ``jax.jit`` of a snippet function made during the
    # run, in order: the review exhibit's "jit created inside the loop"
    created: list[tuple[str, int | None]] = field(default_factory=list)

    def on_duration(self, event: str, duration_secs: float, **kw: str | int) -> None:
        del duration_secs
        name = str(kw.get("fun_name", ""))
        if event == TRACE_EVENT and name in self.names:
            self.traces[name] += 1
        elif event == COMPILE_EVENT and name.startswith("jit(") and name.endswith(")"):
            inner = name[4:-1]
            if inner in self.names:
                self.compiles[inner] += 1


class _Watched:
    """A stand-in for a snippet's jit object: each call from outside a trace goes to
    ``on_call(jitted, args, kwargs, call_site)``; a call with tracers outside an observed call is
    recorded as transformed; everything else is the jit object's. As a class attribute it binds
    to the instance (``self`` first), as the jit object does."""

    def __init__(self, jitted: Any, on_call: OnCall, watch: JitWatch) -> None:
        self._jaxscope_jitted = jitted
        self._on_call = on_call
        self._watch = watch
        self.__wrapped__ = jitted_fun(jitted)
        self.__name__ = _jax_name(self.__wrapped__)
        # JAX's events name the jit by this name: count them (a callable object, a partial of a
        # function defined elsewhere in the snippet, have names the source's defs do not give).
        watch.names.add(self.__name__)
        watch.watched += 1

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        kind = _tracer_kind(args, kwargs)
        if kind is not None:
            if self._watch.depth == 0:
                site = user_call_site()
                how = TRANSFORMATIONS.get(kind, kind)
                self._watch.transformed.append(
                    TransformedCall(self.__name__, how, site[0] if site else None)
                )
            return self._jaxscope_jitted(*args, **kwargs)
        self._watch.depth += 1
        try:
            return self._on_call(self._jaxscope_jitted, args, kwargs, user_call_site())
        finally:
            self._watch.depth -= 1

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jaxscope_jitted, name)


class _Swapper:
    """Walks what the snippet's globals reach and swaps jit objects (and ``jax.jit`` itself)
    for watchers, remembering how to put each back."""

    def __init__(self, wrap: Callable[[Any], Any], real_jit: Any, watching_jit: Any) -> None:
        self.wrap = wrap
        self.real_jit = real_jit
        self.watching_jit = watching_jit
        self.undo: list[Callable[[], None]] = []
        self.seen: set[int] = set()

    def replacement(self, value: Any) -> Any:
        """What ``value`` becomes, or None to leave it."""
        if is_jitted(value) and (
            _from_snippet(jitted_fun(value)) or _user_object(jitted_fun(value))
        ):
            return self.wrap(value)
        if value is self.real_jit:
            return self.watching_jit
        if isinstance(value, functools.partial) and value.func is self.real_jit:
            return functools.partial(self.watching_jit, *value.args, **value.keywords)
        if type(value) is tuple:  # immutable: a new tuple with watchers goes in its slot
            items = [self.replacement(v) for v in value]
            if any(i is not None for i in items):
                return tuple(v if i is None else i for v, i in zip(value, items, strict=True))
        return None

    def slot(self, value: Any, put: Callable[[Any], None], depth: int) -> None:
        new = self.replacement(value)
        if new is not None:
            put(new)
            self.undo.append(lambda: put(value))
            return
        if depth < MAX_DEPTH:
            self.visit(value, depth + 1)

    def visit(self, value: Any, depth: int) -> None:
        if id(value) in self.seen:
            return
        if isinstance(value, dict):
            self.seen.add(id(value))
            for k, v in list(value.items()):
                self.slot(v, functools.partial(value.__setitem__, k), depth)
        elif isinstance(value, list):
            self.seen.add(id(value))
            for i, v in enumerate(list(value)):
                self.slot(v, functools.partial(value.__setitem__, i), depth)
        elif isinstance(value, type) and _snippet_class(value):
            self.seen.add(id(value))
            for k, v in list(vars(value).items()):
                # a jitted __call__ too: calling an instance looks it up on the class
                if not k.startswith("__") or is_jitted(v):
                    self.slot(v, functools.partial(setattr, value, k), depth)
        elif isinstance(value, types.FunctionType) and _from_snippet(value):
            self.seen.add(id(value))
            for cell in value.__closure__ or ():
                try:
                    content = cell.cell_contents
                except ValueError:  # an empty cell (a name assigned later)
                    continue
                self.slot(content, functools.partial(setattr, cell, "cell_contents"), depth)
        elif _flax_jit_wrapper(value):
            self.seen.add(id(value))
            self.slot(value.jitted_fn, functools.partial(setattr, value, "jitted_fn"), depth)
        elif _snippet_class(type(value)) and hasattr(value, "__dict__"):
            self.seen.add(id(value))
            for k, v in list(vars(value).items()):
                self.slot(v, functools.partial(setattr, value, k), depth)

    def restore(self) -> None:
        for undo in reversed(self.undo):
            undo()


def _snippet_class(cls: type) -> bool:
    """A class defined in the snippet: one of its own functions (or jitted functions) comes
    from the snippet file."""
    for v in vars(cls).values():
        fun = jitted_fun(v) if is_jitted(v) else getattr(v, "__func__", v)
        if isinstance(fun, types.FunctionType) and _from_snippet(fun):
            return True
    return False


@contextlib.contextmanager
def watching_jit_calls(
    namespace: dict[str, Any], on_call: OnCall, source: str = ""
) -> Iterator[JitWatch]:
    """While the block runs, every call of a snippet jit object that the user's code can reach
    (module docstring) goes to ``on_call``, and JAX's trace/compile events of the functions
    ``source`` defines are counted (the yielded :class:`JitWatch`). ``jax.jit`` (and a ``jit``
    name or ``partial(jax.jit, ...)`` in ``namespace``) returns watchers for functions defined in
    the snippet. Everything is restored on exit."""
    real_jit = jax.jit
    watch = JitWatch(names=snippet_function_names(source))

    def wrap(jitted: Any) -> _Watched:
        return _Watched(jitted, on_call, watch)

    def watching_jit(fun: Any = None, *a: Any, **kw: Any) -> Any:
        if fun is None:  # @jax.jit(static_argnums=...) style
            return lambda g: watching_jit(g, *a, **kw)
        jitted = real_jit(fun, *a, **kw)
        # The snippet's functions, and any callable the snippet's own code jits (jax.jit(model)
        # of a library module); JAX's and libraries' own jits of their functions pass through.
        called_here = sys._getframe(1).f_code.co_filename == SNIPPET_FILENAME
        if not (_from_snippet(fun) or (called_here and _user_object(fun))):
            return jitted
        site = user_call_site()
        watch.created.append((_jax_name(fun), site[0] if site else None))
        return wrap(jitted)

    swapper = _Swapper(wrap, real_jit, watching_jit)
    swapper.seen.add(id(namespace))
    for name, value in list(namespace.items()):
        if not name.startswith("__"):
            swapper.slot(value, functools.partial(namespace.__setitem__, name), 0)
    jax.jit = watching_jit
    jax.monitoring.register_event_duration_secs_listener(watch.on_duration)
    try:
        yield watch
    finally:
        jax.monitoring.unregister_event_duration_listener(watch.on_duration)
        jax.jit = real_jit
        swapper.restore()
