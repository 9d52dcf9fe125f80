"""The wrapped_fun exhibit's backend half: the snippet's ``f`` runs under one transformation
(``RunOptions.transform``, else the snippet's ``transform``, else ``vmap``) while
``jaxscope.internals.wrapped_fun_watch`` records every ``WrappedFun`` built around the snippet's
functions: the stacks (outermost first, with their static params and stores), the real order in
which their generators were entered and left, and the stores' fills. For a transformation that
builds none (``jit``, ``grad``, ``jvp``, ``vjp``, ``make_jaxpr``, ``checkpoint`` in jax 0.10.2)
the count is 0, and the JAX frames that called ``f`` say what traced it instead.

Stages: ``trace`` (the watched run). Events: one ``wrapped_fun_stack_built`` per stack, one
``wrapped_fun_calls_recorded``, then ``wrapped_fun_watched``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from types import CodeType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.exhibit_api import (
    SNIPPET_FILENAME,
    InvalidSnippet,
    ProbeContext,
    WrappedFunStack,
    WrappedFunStep,
    blame_line,
    block_until_ready,
    first_callers,
    options_as,
    preview_value,
    setting_line,
    store_kind,
    store_value,
    watching_wrapped_funs,
    wrapped_core_code,
    write_once_text,
)

from .events import (
    WrappedFunCaller,
    WrappedFunCallsRecorded,
    WrappedFunCallStep,
    WrappedFunParam,
    WrappedFunStackBuilt,
    WrappedFunStoreView,
    WrappedFunTransformView,
    WrappedFunWatched,
)
from .options import WrappedFunOptions, WrappedFunTransform

DEFAULT_TRANSFORM: WrappedFunTransform = "vmap"
TRANSFORMS: tuple[str, ...] = WrappedFunTransform.__args__  # type: ignore[attr-defined]
# A static param's or a store value's repr is cut here: a PyTreeDef of a big pytree is long.
MAX_REPR = 160
# The timeline sent; a vmap over a loop of custom_vjp calls enters stacks thousands of times.
MAX_STEPS = 2000
OUT_CHARS = 1200

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# A bare ``object()`` is a sentinel: JAX's ``core.no_axis_name`` (vmap without ``axis_name``)
# prints as ``AxisData(name=<object object at 0x..>, ...)``; the page says what it means.
_SENTINEL = "<object object>"
NO_NAME = "no name"
_SNIPPET_AT = re.compile(r" at " + re.escape(SNIPPET_FILENAME) + r":(\d+)$")


def short_repr(value: Any) -> str:
    """``repr(value)`` on one line without memory addresses (``<function g at 0x7f..>`` is
    ``<function g>``, so that runs compare equal), a bare ``object()`` sentinel as
    :data:`NO_NAME` (``AxisData(name=no name, size=3, ...)``), cut at :data:`MAX_REPR`
    characters."""
    try:
        text = _ADDRESS.sub("", " ".join(repr(value).split())).replace(_SENTINEL, NO_NAME)
    except Exception as exc:  # a value whose repr raises: say so rather than fail the run
        text = f"<{type(value).__name__}: repr raised {type(exc).__name__}>"
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 1] + "…"


def ones_like(tree: Any) -> Any:
    """A tangent or cotangent for every leaf of ``tree`` (arrays, shape structs, Python
    scalars): ones of a float leaf's dtype; for an integer or bool leaf, zeros of ``float0``,
    the only tangent JAX takes there. (``x.dtype`` failed on a Python scalar argument, and
    int32 ones were refused by ``jax.jvp``.)"""

    def one(x: Any) -> Any:
        dtype = x.dtype if hasattr(x, "dtype") else jnp.result_type(x)
        if not jnp.issubdtype(dtype, jnp.inexact):
            return np.zeros(jnp.shape(x), jax.dtypes.float0)
        return jnp.ones(jnp.shape(x), dtype)

    return jax.tree.map(one, tree)


def call_text(transform: str, in_axes: Any) -> str:
    """The Python the probe runs, as the view shows it."""
    return {
        "vmap": f"jax.vmap(f, in_axes={in_axes!r})(*args)",
        "jit": "jax.jit(f)(*args)",
        "grad": "jax.grad(f)(*args)",
        "jvp": "jax.jvp(f, args, ones)",
        "custom_jvp": "jax.jvp(f, args, ones)  # f calls a jax.custom_jvp function",
        "vjp": "out, pullback = jax.vjp(f, *args); pullback(ones)",
        "custom_vjp": "out, pullback = jax.vjp(f, *args); pullback(ones)  # f calls a "
        "jax.custom_vjp function",
        "linear_transpose": "jax.linear_transpose(f, *args)(ones)",
        "make_jaxpr": "jax.make_jaxpr(f)(*args)",
        "checkpoint": "jax.checkpoint(f)(*args)",
    }[transform]


def runner(
    transform: str,
    f: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    in_axes: Any,
) -> Callable[[], Any]:
    """A thunk that runs ``f`` on ``args`` under ``transform`` (public JAX only) and returns
    what the view shows: the result, ``(out, tangents)`` for ``jvp``, ``(out, cotangents)`` for
    ``vjp``, the cotangents for ``linear_transpose``, the ``ClosedJaxpr`` for ``make_jaxpr``.
    Shapes needed up front (the cotangent of ``linear_transpose``) are taken here, outside the
    watch."""
    g = functools.partial(f, **kwargs) if kwargs else f
    if transform == "vmap":
        return lambda: jax.vmap(f, in_axes=in_axes)(*args, **kwargs)
    if transform == "jit":
        return lambda: jax.jit(f)(*args, **kwargs)
    if transform == "grad":
        return lambda: jax.grad(g)(*args)
    if transform in ("jvp", "custom_jvp"):
        return lambda: jax.jvp(g, args, ones_like(args))
    if transform in ("vjp", "custom_vjp"):

        def vjp() -> Any:
            out, pullback = jax.vjp(g, *args)
            return out, pullback(ones_like(out))

        return vjp
    if transform == "linear_transpose":
        ct = ones_like(jax.eval_shape(g, *args))
        return lambda: jax.linear_transpose(g, *args)(ct)
    if transform == "make_jaxpr":
        return lambda: jax.make_jaxpr(f)(*args, **kwargs)
    return lambda: jax.checkpoint(f)(*args, **kwargs)


def chosen_transform(ctx: ProbeContext) -> str:
    """The option, else the snippet's ``transform``, else :data:`DEFAULT_TRANSFORM`; a bad
    snippet value is an error at the line that sets it."""
    chosen = options_as(ctx.options, WrappedFunOptions).transform
    if chosen is not None:
        return chosen
    value = ctx.snippet.namespace.get("transform", DEFAULT_TRANSFORM)
    if value not in TRANSFORMS:
        raise blame_line(
            InvalidSnippet(f"`transform` must be one of {', '.join(TRANSFORMS)}; got {value!r}"),
            setting_line(ctx.snippet.source, "transform"),
        )
    return str(value)


def from_snippet(fun: Any) -> bool:
    """A function defined in the snippet (unwrapped; a ``functools.partial``'s function)."""
    code = wrapped_core_code(fun.func if isinstance(fun, functools.partial) else fun)
    return code is not None and code.co_filename == SNIPPET_FILENAME


def snippet_codes(namespace: dict[str, Any]) -> set[CodeType]:
    """The code objects of the snippet's top-level functions (``custom_vjp`` objects unwrapped
    to their function)."""
    codes = {wrapped_core_code(v) for v in list(namespace.values()) if callable(v)}
    return {c for c in codes if c is not None and c.co_filename == SNIPPET_FILENAME}


def core_line(source: str | None) -> int | None:
    m = _SNIPPET_AT.search(source or "")
    return int(m.group(1)) if m else None


def out_text(transform: str, result: Any) -> str:
    """A printout of the result: the jaxpr text for ``make_jaxpr``, else each leaf's numpy
    printout after its key path (``['y'] = [...]``; a bare array has none), cut at
    :data:`OUT_CHARS`."""
    if transform == "make_jaxpr":
        text = str(result)
    else:
        leaves, _ = jax.tree_util.tree_flatten_with_path(result)
        text = "\n".join(
            f"{jax.tree_util.keystr(path)} = {preview_value(leaf)}" if path else preview_value(leaf)
            for path, leaf in leaves
        )
    return text if len(text) <= OUT_CHARS else text[: OUT_CHARS - 1] + "…"


def step_views(steps: list[WrappedFunStep]) -> list[WrappedFunCallStep]:
    """The timeline with each step's nesting depth (frames open before it, over all stacks)."""
    out: list[WrappedFunCallStep] = []
    depth = 0
    for s in steps:
        if s.stack < 0:  # a store filled from a cache, of no entered stack
            continue
        if s.event == "leave":
            depth -= 1
        out.append(
            WrappedFunCallStep(
                event=s.event,
                stack=s.stack,
                position=s.position,
                name=s.name,
                core=s.position is None,
                depth=max(depth, 0),
            )
        )
        if s.event == "enter":
            depth += 1
    return out


def stack_event(stack: WrappedFunStack, steps: list[WrappedFunStep]) -> WrappedFunStackBuilt:
    transforms = [
        WrappedFunTransformView(
            position=pos,
            name=t.name,
            module=t.module,
            params=[WrappedFunParam(name=n, text=short_repr(v)) for n, v in t.params],
            push=t.push,
            store=store_kind(t.store),  # type: ignore[arg-type]
        )
        for pos, t in enumerate(stack.transforms)
    ]
    stores = []
    for pos, t in enumerate(stack.transforms):
        kind = store_kind(t.store)
        if kind is None:
            continue
        filled, value = store_value(t.store)
        fill = next(
            (
                (i, s)
                for i, s in enumerate(steps)
                if s.event == "fill" and s.stack == stack.index and s.position == pos
            ),
            None,
        )
        stores.append(
            WrappedFunStoreView(
                position=pos,
                transform=t.name,
                kind=kind,  # type: ignore[arg-type]
                filled=filled,
                value=short_repr(value) if filled else None,
                value_type=type(value).__name__ if filled else None,
                step=fill[0] if fill else None,
                filler=fill[1].filler if fill else None,
                write_once=write_once_text(t.store),
            )
        )
    first_built = next((t.built_line for t in reversed(stack.transforms)), None)
    return WrappedFunStackBuilt(
        index=stack.index,
        core_name=stack.core_name,
        core_source=stack.core_source,
        core_line=core_line(stack.core_source),
        entered=stack.entered,
        line=stack.entered_line if stack.entered_line is not None else first_built,
        transforms=transforms,
        stores=stores,
    )


# JAX's messages (jax/_src/api.py vmap, _mapped_axis_size, flatten_axes) about in_axes itself
# (the vmap exhibit's list).
IN_AXES_MESSAGES = ("vmap in_axes", "vmap was requested to map", "non-None value in in_axes")


def run(ctx: ProbeContext) -> None:
    """Run ``f`` under the chosen transformation with the watch on; emit what it saw."""
    snippet = ctx.snippet
    transform = chosen_transform(ctx)
    in_axes = snippet.namespace.get("in_axes", 0)
    thunk = runner(transform, snippet.f, snippet.args, snippet.kwargs, in_axes)
    codes = snippet_codes(snippet.namespace)
    f_code = wrapped_core_code(snippet.f)
    if f_code is not None:
        codes.add(f_code)
    with ctx.stage("trace"):
        with first_callers(codes) as callers, watching_wrapped_funs(from_snippet) as watch:
            try:
                result = block_until_ready(thunk())
            except Exception as exc:
                # JAX's error about the snippet's in_axes itself belongs to the line that sets
                # it (else the run points at `def f`, as JAX raised it before calling f)
                if transform == "vmap" and "in_axes" in snippet.namespace:
                    if str(exc).startswith(IN_AXES_MESSAGES):
                        blame_line(exc, setting_line(snippet.source, "in_axes"))
                raise
    # Steps as sent (the fills of no entered stack left out), so a store's step indexes them.
    steps = [s for s in watch.steps if s.stack >= 0]
    for stack in watch.stacks:
        ctx.emit(stack_event(stack, steps))
    views = step_views(steps)
    ctx.emit(
        WrappedFunCallsRecorded(
            steps=views[:MAX_STEPS], steps_left_out=max(0, len(views) - MAX_STEPS)
        )
    )
    traced_by = callers.get(f_code, []) if f_code is not None else []
    ctx.emit(
        WrappedFunWatched(
            transform=transform,
            call=call_text(transform, in_axes),
            built_around=watch.built_around,
            stacks=len(watch.stacks),
            traced_by=[
                WrappedFunCaller(function=c.function, file=c.file, line=c.line) for c in traced_by
            ],
            out=out_text(transform, result),
        )
    )
