"""What the custom_vjp lab needs to know about ``jax.custom_vjp`` / ``jax.custom_jvp`` objects.

The objects are public (``jax.custom_vjp``, ``jax.custom_jvp``), but the attributes read here are
not documented API: ``.fun`` (the undecorated function, ``custom_derivatives.py`` ``__init__``),
``.nondiff_argnums`` (sorted tuple), ``.fwd``/``.bwd`` (set by ``defvjp``, ``None`` before) and
``.jvp`` (set by ``defjvp``). ``jax.config.custom_vjp3`` would make ``jax.custom_vjp(f)`` return a
``hijax.custom_vjp3`` instead (off by default in 0.10.2). Errors raised in the backward pass keep
the user line of the call they came from only in their ``__cause__``, a
``source_info_util.JaxStackTraceBeforeTransformation`` whose traceback is the eqn's
``source_info``. Each of these facts has a contract test in
``backend/tests/test_internals_contract_custom.py``.

Besides reading, this module can rebind the names under which a custom function is reachable in
the snippet's globals (the module dict ``f.__globals__``): to a recorder (what does the function
receive when ``f`` calls it?) or to its undecorated ``.fun`` (autodiff of the same math without
the rule). Rebinding is undone on exit.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import linecache
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Literal

import jax
from jax._src import source_info_util

from jaxscope.protocol import SourceLoc
from jaxscope.snippet_model import SNIPPET_FILENAME
from jaxscope.user_text import exception_text

source_info_util.register_exclusion(__file__)

CustomKind = Literal["custom_vjp", "custom_jvp"]

# The primitives a custom function binds when it is traced (their eqns name the function).
CUSTOM_CALL_PRIMITIVES = {"custom_vjp": "custom_vjp_call", "custom_jvp": "custom_jvp_call"}


@dataclass
class CustomFunction:
    """A ``jax.custom_vjp``/``jax.custom_jvp`` object found in a snippet.

    ``fun`` the undecorated function; ``rules`` the rule functions by role (``fwd``, ``bwd`` or
    ``jvp``; missing when not defined yet); ``names`` the global names bound to it in the
    snippet; ``is_f`` whether it is the snippet's ``f`` itself.
    """

    obj: Any
    kind: CustomKind
    name: str
    fun: Callable[..., Any]
    nondiff_argnums: tuple[int, ...]
    rules: dict[str, Callable[..., Any]]
    names: list[str] = field(default_factory=list)
    is_f: bool = False

    def param_names(self) -> list[str]:
        """The undecorated function's positional parameter names (``[]`` when unknown)."""
        try:
            sig = inspect.signature(self.fun)
        except (TypeError, ValueError):
            return []
        return [
            p.name
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]


def kind_of(obj: Any) -> CustomKind | None:
    """``custom_vjp``/``custom_jvp`` for such an object, else ``None``."""
    if isinstance(obj, jax.custom_vjp):
        return "custom_vjp"
    if isinstance(obj, jax.custom_jvp):
        return "custom_jvp"
    return None


def describe(obj: Any, names: list[str] | None = None, is_f: bool = False) -> CustomFunction:
    """A :class:`CustomFunction` for ``obj`` (which :func:`kind_of` accepts)."""
    kind = kind_of(obj)
    if kind is None:
        raise TypeError(f"not a custom_vjp/custom_jvp object: {type(obj).__name__}")
    roles = ("fwd", "bwd") if kind == "custom_vjp" else ("jvp",)
    rules = {r: getattr(obj, r) for r in roles if getattr(obj, r, None) is not None}
    fun = obj.fun
    return CustomFunction(
        obj=obj,
        kind=kind,
        name=str(getattr(fun, "__name__", None) or (names and names[0]) or "custom function"),
        fun=fun,
        nondiff_argnums=tuple(int(i) for i in obj.nondiff_argnums),
        rules=rules,
        names=list(names or []),
        is_f=is_f,
    )


def find_custom_functions(namespace: dict[str, Any], f: Any) -> list[CustomFunction]:
    """The custom functions of a snippet: ``f`` itself when it is one, then every custom object
    bound to a name in ``namespace`` (each once, with all its names), in namespace order."""
    by_id: dict[int, CustomFunction] = {}
    order: list[int] = []
    if kind_of(f) is not None:
        by_id[id(f)] = describe(f, [], is_f=True)
        order.append(id(f))
    for name, value in namespace.items():
        if name.startswith("__") or kind_of(value) is None:
            continue
        if id(value) not in by_id:
            by_id[id(value)] = describe(value, [])
            order.append(id(value))
        by_id[id(value)].names.append(name)
    return [by_id[i] for i in order]


def snippet_globals(f: Any) -> dict[str, Any] | None:
    """The module dict ``f``'s body looks names up in (through ``functools.partial`` and
    ``__wrapped__``), when ``f`` was defined in the snippet."""
    for _ in range(8):
        if isinstance(f, functools.partial):
            f = f.func
            continue
        code = getattr(f, "__code__", None)
        if isinstance(code, CodeType):
            g = getattr(f, "__globals__", None)
            return g if code.co_filename == SNIPPET_FILENAME and isinstance(g, dict) else None
        f = getattr(f, "__wrapped__", None)
        if f is None:
            return None
    return None


@dataclass
class RecordedCall:
    """One call of a custom function: its positional arguments (keyword arguments resolved to
    positions as ``custom_vjp.__call__`` does) and the snippet line it was called from."""

    args: tuple[Any, ...]
    source: SourceLoc | None


def _resolve(
    fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    if not kwargs:
        return args
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.args) + tuple(bound.kwargs.values())


def _caller_source() -> SourceLoc | None:
    for fs in reversed(traceback.extract_stack()):
        if fs.filename == SNIPPET_FILENAME and fs.lineno is not None:
            return SourceLoc(line=fs.lineno, function=fs.name)
    return None


@contextlib.contextmanager
def rebound(glb: dict[str, Any], names: list[str], value: Any) -> Iterator[None]:
    """Bind each of ``names`` in ``glb`` to ``value``; restore the old bindings on exit."""
    old = {n: glb[n] for n in names if n in glb}
    try:
        for n in names:
            glb[n] = value
        yield
    finally:
        for n in names:
            if n in old:
                glb[n] = old[n]
            else:
                glb.pop(n, None)


@contextlib.contextmanager
def recording_calls(glb: dict[str, Any], custom: CustomFunction) -> Iterator[list[RecordedCall]]:
    """Rebind ``custom``'s names to a recorder that notes each call, then calls the custom
    function itself (so the result is unchanged)."""
    calls: list[RecordedCall] = []
    obj = custom.obj

    @functools.wraps(custom.fun)
    def recorder(*args: Any, **kwargs: Any) -> Any:
        calls.append(RecordedCall(_resolve(custom.fun, args, kwargs), _caller_source()))
        return obj(*args, **kwargs)

    with rebound(glb, custom.names, recorder):
        yield calls


@contextlib.contextmanager
def without_rule(glb: dict[str, Any], custom: CustomFunction) -> Iterator[list[int]]:
    """Rebind ``custom``'s names to its undecorated ``.fun``: ``f`` then computes the same math,
    and JAX differentiates it with its own rules. Yields a one-element call counter."""
    count = [0]
    fun = custom.fun

    @functools.wraps(fun)
    def plain(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return fun(*args, **kwargs)

    with rebound(glb, custom.names, plain):
        yield count


def snippet_frames(tb: Any) -> list[SourceLoc]:
    """The snippet frames of a traceback, outermost first."""
    out = []
    for fs in traceback.extract_tb(tb):
        if fs.filename == SNIPPET_FILENAME and fs.lineno is not None:
            out.append(SourceLoc(line=fs.lineno, function=fs.name))
    return out


def error_source(exc: BaseException) -> SourceLoc | None:
    """The snippet line an error belongs to: the deepest snippet frame of its traceback, else
    that of the ``JaxStackTraceBeforeTransformation`` JAX chains to errors raised while
    transforming (e.g. the backward pass): the line of the call that was being transformed."""
    frames = snippet_frames(exc.__traceback__)
    if frames:
        return frames[-1]
    cause = exc.__cause__
    for _ in range(4):
        if cause is None:
            break
        if isinstance(cause, source_info_util.JaxStackTraceBeforeTransformation):
            frames = snippet_frames(cause.__traceback__)
            if frames:
                return frames[-1]
        cause = cause.__cause__
    return None


def code_line(fn: Any) -> int | None:
    """The ``def`` line of a function defined in the snippet (``None`` otherwise)."""
    for _ in range(8):
        if isinstance(fn, functools.partial):
            fn = fn.func
            continue
        code = getattr(fn, "__code__", None)
        if isinstance(code, CodeType):
            return code.co_firstlineno if code.co_filename == SNIPPET_FILENAME else None
        fn = getattr(fn, "__wrapped__", None)
        if fn is None:
            return None
    return None


def return_source(fn: Any) -> SourceLoc | None:
    """Where a snippet function hands back its value: its ``return`` statement when it has
    exactly one (nested functions' own returns not counted), else its ``def`` line; ``None``
    for a function not defined in the snippet. JAX checks a rule's output after the rule has
    returned (``_flatten_bwd``), so its traceback never reaches the rule itself."""
    first = code_line(fn)
    if first is None:
        return None
    try:
        tree = ast.parse("".join(linecache.getlines(SNIPPET_FILENAME)))
    except (SyntaxError, ValueError):
        return SourceLoc(line=first)
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        lines = [node.lineno] + [d.lineno for d in node.decorator_list]
        if min(lines) != first:
            continue
        returns: list[ast.Return] = []
        todo: list[ast.AST] = list(node.body)
        while todo:
            child = todo.pop()
            if isinstance(child, ast.Return):
                returns.append(child)
            if not isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
            ):
                todo.extend(ast.iter_child_nodes(child))
        if len(returns) == 1:
            r = returns[0]
            return SourceLoc(
                line=r.lineno,
                column=r.col_offset,
                end_line=r.end_lineno,
                end_column=r.end_col_offset,
                function=node.name,
            )
        return SourceLoc(line=node.lineno, function=node.name)
    return SourceLoc(line=first)


@dataclass(frozen=True)
class RejectedBwd:
    """The ``custom_vjp`` bwd rule whose output JAX rejected: its ``name``, ``def_line`` and
    ``returns`` (:func:`return_source`), and ``custom`` the function it belongs to."""

    name: str
    def_line: int | None
    returns: SourceLoc | None
    custom: str


BWD_OUTPUT_ERRORS = (
    "Custom VJP bwd rule must produce an output",
    "Custom VJP bwd rule produced a SymbolicZero",
)


def _named_on_line(scope: dict[str, Any], line: int) -> list[Any]:
    """The objects the snippet ``line`` calls by a name or a dotted name, looked up in
    ``scope``."""
    text = linecache.getline(SNIPPET_FILENAME, line).strip()
    try:
        tree = ast.parse(text.removeprefix("return ").rstrip(":") or "None")
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        parts: list[str] = []
        func = node.func
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            continue
        obj = scope.get(func.id)
        for attr in reversed(parts):
            obj = getattr(obj, attr, None)
        if obj is not None:
            found.append(obj)
    return found


def rejected_bwd(exc: BaseException, namespace: dict[str, Any] | None = None) -> RejectedBwd | None:
    """For JAX's error about a ``custom_vjp`` bwd's output (raised in ``_flatten_bwd`` after the
    rule returned; JAX's traceback filtering drops that frame, and no line of bwd is on the
    traceback): the bwd at fault, found from the snippet frame that called the custom
    function (the deepest one on the traceback, or on the stack JAX saved before
    transforming): a ``custom_vjp`` object that line calls, else the only one with a bwd in
    that frame's globals. The saved stack's frames carry no variables: names are then looked
    up in ``namespace`` (the snippet's globals). ``None`` for another error, or when none or
    several match."""
    msg = exception_text(exc)
    if not any(msg.startswith(m) for m in BWD_OUTPUT_ERRORS):
        return None
    tbs = [exc.__traceback__]
    cause = exc.__cause__
    for _ in range(4):
        if cause is None:
            break
        if isinstance(cause, source_info_util.JaxStackTraceBeforeTransformation):
            tbs.append(cause.__traceback__)
        cause = cause.__cause__
    for tb in tbs:
        frames = []
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
                frames.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        for frame, line in reversed(frames):
            scope = {**(namespace or {}), **frame.f_globals, **frame.f_locals}
            called = [o for o in _named_on_line(scope, line) if kind_of(o) == "custom_vjp"]
            if not called:
                called = [o for o in scope.values() if kind_of(o) == "custom_vjp"]
            called = [o for i, o in enumerate(called) if all(o is not p for p in called[:i])]
            with_bwd = [o for o in called if getattr(o, "bwd", None) is not None]
            if len(with_bwd) == 1:
                custom = describe(with_bwd[0])
                bwd = custom.rules["bwd"]
                return RejectedBwd(
                    name=str(getattr(bwd, "__name__", "bwd")),
                    def_line=code_line(bwd),
                    returns=return_source(bwd),
                    custom=custom.name,
                )
            if with_bwd:
                return None
    return None
