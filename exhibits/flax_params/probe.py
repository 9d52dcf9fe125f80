"""The flax_params exhibit's backend half: a Flax model's parameters as data.

The snippet defines ``model`` (a linen ``Module`` instance, or an nnx ``Module`` class or any
callable that builds one from ``rngs=``), ``args`` (the inputs of ``init`` and ``apply``, or of
the nnx model's call) and optionally ``rngs`` (a seed, a key, or a dict of them per stream;
default 0) and ``apply_args`` (``apply``'s inputs when they differ from ``init``'s: the
branch-built-submodule bug). ``model_args``, when the snippet defines it, are the model's inputs
instead of ``args``: a program written for the other exhibits (``examples/real``'s Flax train
steps) keeps ``args`` for its ``f`` and names the model's own inputs apart.

linen: ``model.init`` runs eagerly under ``recording_linen`` (``Scope.param``/``make_rng``
observed), one ``param_created`` per created parameter with the key flax derived for it; then
``model.apply`` on the very dict ``init`` returned, its reads observed, and its jaxpr
(``jax.make_jaxpr`` of ``variables -> apply``) with JAX's dead-code elimination telling which
parameter never reaches the output. nnx: the model is built under ``recording_nnx`` (each
``RngStream`` draw, each ``nnx.Param``), then ``nnx.split``/``nnx.merge``.

Flax's own errors (``flax.errors.FlaxError``) and JAX's branch check under ``nn.cond`` raised by
``init``/``apply`` are shown (``flax_error_raised``), since they are the lesson; any other
exception propagates to the runner.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import (
    SNIPPET_FILENAME,
    AvalView,
    InvalidSnippet,
    JaxprStaged,
    LinenParam,
    LinenRecorder,
    NnxRecorder,
    ProbeContext,
    StageTimed,
    aval_view,
    blame_line,
    cut_message,
    exception_class,
    exception_text,
    jaxpr_view,
    preview_value,
    recording_linen,
    recording_nnx,
    setting_line,
    stage_timers,
    unused_invars,
)

from .events import (
    FlaxErrorRaised,
    GraphNode,
    NnxStateSplit,
    OtherKey,
    ParamCreated,
    ParamLeaf,
    ParamRead,
    ParamsApplied,
    ParamsInitialized,
    StateLeaf,
)
from .initializers import describe

# JAX's check that nn.cond's branches made the same variables (flax lifts the branches' variable
# dicts into cond's outputs).
BRANCH_CHECK = "branch outputs must have the same pytree structure"
# Parameters checked by re-running their initializer: above this many elements the check would
# cost more than the run.
MAX_REPRODUCE_SIZE = 1 << 22


def key_data(key: Any) -> list[int] | None:
    """``jax.random.key_data(key)`` as a list of ints; None for a tracer or a batch of keys."""
    try:
        data = jax.random.key_data(key)
    except (TypeError, ValueError):
        return None
    if isinstance(data, jax.core.Tracer):
        return None
    arr = np.asarray(data)
    return [int(x) for x in arr.reshape(-1)] if arr.ndim == 1 else None


def concrete(value: Any) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(value))


def first_aval(value: Any) -> AvalView:
    """The aval of ``value`` (of its first leaf when an initializer made a pytree)."""
    leaves = jax.tree_util.tree_leaves(value)
    return aval_view(jax.typeof(leaves[0] if leaves else value))


def trees_equal(a: Any, b: Any) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    return str(ta) == str(tb) and all(
        np.shape(x) == np.shape(y) and np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(la, lb, strict=True)
    )


def reproduces(
    init_fn: Callable[..., Any], key: Any, args: tuple[Any, ...], kw: dict[str, Any], value: Any
) -> bool | None:
    """Whether ``init_fn(key, *args, **kw)`` equals ``value`` (None: not checkable)."""
    if key is None or not concrete(value) or not concrete(key):
        return None
    size = sum(int(np.size(x)) for x in jax.tree_util.tree_leaves(value))
    if size > MAX_REPRODUCE_SIZE:
        return None
    try:
        again = init_fn(key, *args, **kw)
    except Exception:
        return None
    return trees_equal(again, value)


def error_line(exc: BaseException) -> int | None:
    """The innermost snippet line of ``exc``'s traceback."""
    line = None
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def shown_error(exc: BaseException) -> bool:
    """An error this exhibit shows rather than fails on: Flax's own, or JAX's nn.cond branch
    check."""
    import flax.errors

    return isinstance(exc, flax.errors.FlaxError) or (
        isinstance(exc, TypeError) and BRANCH_CHECK in exception_text(exc)
    )


def short_paths(text: str) -> str:
    """``text`` with installed files named from ``site-packages`` down (``flax/core/lift.py``),
    as on any machine."""
    return re.sub(r"\S*/site-packages/", "", text)


def error_class(exc: BaseException) -> str:
    """``module.Class`` of ``exc`` (a builtin's bare name), cut as run_failed's class is (a
    user's subclass of ``FlaxError`` names both)."""
    module = getattr(type(exc), "__module__", None)
    name = type(exc).__name__
    if not isinstance(module, str) or module == "builtins":
        return exception_class(exc)
    return cut_message(f"{module}.{name}")


def error_event(phase: str, exc: BaseException) -> FlaxErrorRaised:
    # cut, and read without raising (a user's FlaxError subclass whose __str__ raises)
    message = short_paths(exception_text(exc))
    docs = re.search(r"\((https://flax\.readthedocs\.io/[^)\s]+)\)", message)
    return FlaxErrorRaised(
        phase="init" if phase == "init" else "apply",
        error_class=error_class(exc),
        message=message,
        line=error_line(exc),
        docs=docs.group(1) if docs else None,
    )


def names(path: tuple[Any, ...]) -> list[str]:
    """A key path as plain names: ``(DictKey('params'), DictKey('Dense_0'))`` -> the keys. An
    nnx Variable's own ``.value`` step at the end is left out (``['l1']['kernel'].value`` ->
    ``l1``, ``kernel``)."""
    if path and isinstance(path[-1], jax.tree_util.GetAttrKey) and path[-1].name == "value":
        path = path[:-1]
    out = []
    for k in path:
        for attr in ("key", "name", "idx"):
            if hasattr(k, attr):
                out.append(str(getattr(k, attr)))
                break
        else:
            out.append(str(k))
    return out


def inputs_name(ns: dict[str, Any]) -> str:
    """The snippet name that holds the model's inputs: ``model_args`` when the snippet defines
    it (its ``args`` are then another function's, a train step ``f``), else ``args``."""
    return "model_args" if "model_args" in ns else "args"


def snippet_settings(ctx: ProbeContext) -> tuple[Any, tuple[Any, ...], tuple[Any, ...], Any]:
    """``model``, the model's inputs (``model_args``, else ``args``), ``apply_args`` and
    ``rngs`` of the snippet."""
    ns = ctx.snippet.namespace
    source = ctx.snippet.source
    if "model" not in ns:
        raise InvalidSnippet(
            "the flax_params exhibit needs `model`: a linen Module instance (`model = MLP()`) or"
            " an nnx Module class (`model = MLP`), and `args`, the inputs of init/apply"
        )
    name = inputs_name(ns)
    for given in (name, "apply_args"):
        if given in ns and not isinstance(ns[given], (tuple, list)):
            raise blame_line(
                InvalidSnippet(f"`{given}` must be a tuple of the model's inputs"),
                setting_line(source, given),
            )
    if name not in ns:
        raise InvalidSnippet(
            "the flax_params exhibit needs `args` (or `model_args`), the inputs of init/apply"
        )
    args = tuple(ns[name])
    return ns["model"], args, tuple(ns.get("apply_args", args)), ns.get("rngs", 0)


def run(ctx: ProbeContext) -> None:
    """Initialize and apply the snippet's model, linen or nnx, recording its parameters."""
    import flax.linen as nn
    from flax import nnx

    model, args, apply_args, rngs = snippet_settings(ctx)
    if isinstance(model, nn.Module):
        run_linen(ctx, model, args, apply_args, rngs, "apply_args" in ctx.snippet.namespace)
    elif isinstance(model, nnx.Module):
        raise blame_line(
            InvalidSnippet(
                "`model` is an nnx Module that is already built, so its parameters were made"
                " before the exhibit could watch: set `model` to the class (or a function"
                " taking `rngs=`), e.g. `model = MLP` or `functools.partial(MLP, 4, 16)`"
            ),
            setting_line(ctx.snippet.source, "model"),
        )
    elif callable(model):
        run_nnx(ctx, model, args, apply_args, rngs)
    else:
        raise blame_line(
            InvalidSnippet(f"`model` must be a linen Module or an nnx Module class, got {model!r}"),
            setting_line(ctx.snippet.source, "model"),
        )


# --------------------------------------------------------------------------------------------
# linen
# --------------------------------------------------------------------------------------------


def linen_rngs(rngs: Any) -> Any:
    """``init``'s rngs: a seed becomes ``jax.random.key(seed)``; a dict per stream likewise."""
    if isinstance(rngs, dict):
        return {k: linen_rngs(v) for k, v in rngs.items()}
    return jax.random.key(rngs) if isinstance(rngs, int) else rngs


def param_created(index: int, p: LinenParam) -> ParamCreated:
    rng = p.rng
    key = rng.key if rng is not None else None
    return ParamCreated(
        api="linen",
        index=index,
        path=list(p.path),
        aval=first_aval(p.value),
        initializer=describe(p.init_fn),
        key=key_data(key) if key is not None else None,
        root_key=key_data(rng.root_key) if rng is not None else None,
        stream=rng.stream if rng is not None else "params",
        fold_in_data=list(rng.suffix) if rng is not None else [],
        folded=rng.folded if rng is not None else None,
        reproduced=reproduces(p.init_fn, key, p.init_args, p.init_kwargs, p.value),
        preview=preview_value(p.value) if concrete(p.value) else None,
        line=p.line,
    )


def params_initialized(
    api: str,
    tree: Any,
    created: dict[tuple[str, ...], int],
    seconds: float,
    timed: list[StageTimed],
    other_keys: list[OtherKey],
) -> ParamsInitialized:
    flat, treedef = jax.tree_util.tree_flatten_with_path(tree)
    leaves = []
    for path, leaf in flat:
        names_ = names(path)
        leaves.append(
            ParamLeaf(
                keypath=jax.tree_util.keystr(path),
                path=names_,
                aval=aval_view(jax.typeof(leaf)),
                created_index=created.get(tuple(names_)),
            )
        )
    compiles = [t for t in timed if t.stage == "compile"]
    return ParamsInitialized(
        api="linen" if api == "linen" else "nnx",
        container=type(tree).__name__,
        treedef=str(treedef),
        leaves=leaves,
        total_size=sum(int(np.size(leaf)) for _, leaf in flat),
        total_bytes=sum(int(np.size(leaf)) * np.dtype(leaf.dtype).itemsize for _, leaf in flat),
        init_seconds=seconds,
        compiles=len(compiles),
        compile_seconds=sum(t.duration_ms for t in compiles) / 1e3,
        other_keys=other_keys,
    )


def output_fields(out: Any) -> tuple[str, AvalView | None]:
    leaves = jax.tree_util.tree_leaves(out)
    aval = aval_view(jax.typeof(out)) if len(leaves) == 1 and leaves[0] is out else None
    return preview_value(out) if aval is not None else repr(out)[:2000], aval


def _wrong_inputs(exc: BaseException) -> bool:
    """Whether ``model.init(rngs, *args)`` failed because ``args`` are not the model's inputs
    (Python's own ``TypeError`` for the module's ``__call__``)."""
    text = exception_text(exc)
    return isinstance(exc, TypeError) and "__call__()" in text and "argument" in text


def _blame_args(ctx: ProbeContext, exc: BaseException, given: int) -> None:
    """Blame the snippet's ``args`` (or ``model_args``) line for inputs the model's ``__call__``
    does not take: a snippet written for the other exhibits (``f`` a train step, ``args`` its
    arguments) gives ``init`` the train step's arguments."""
    name = inputs_name(ctx.snippet.namespace)
    blame_line(
        exc,
        setting_line(ctx.snippet.source, name),
        explanation=(
            f"The flax_params exhibit calls model.init(rngs, *{name}) and model.apply(params, "
            f"*{name}): `{name}` must be the model's own inputs (here it has {given}), not the "
            "arguments of a train step f. Set `model_args = (x,)` with what `model(...)` takes "
            "(`args` stays f's for the other exhibits), and `apply_args` when apply should see "
            "other inputs."
        ),
    )


def run_linen(
    ctx: ProbeContext,
    model: Any,
    args: tuple[Any, ...],
    apply_args: tuple[Any, ...],
    rngs: Any,
    own_apply_args: bool,
) -> None:
    timed: list[StageTimed] = []
    rec: LinenRecorder
    with ctx.stage("run"), stage_timers(timed.append), recording_linen() as rec:
        start = time.perf_counter()
        try:
            variables = model.init(linen_rngs(rngs), *args)
        except Exception as exc:
            if not shown_error(exc):
                if _wrong_inputs(exc):
                    _blame_args(ctx, exc, len(args))
                raise
            failed: BaseException | None = exc
        else:
            failed = None
        seconds = time.perf_counter() - start
    made = [p for p in rec.params if p.created]
    for i, p in enumerate(made):
        ctx.emit(param_created(i, p))
    if failed is not None:
        ctx.emit(error_event("init", failed))
        return
    created = {("params", *p.path): i for i, p in enumerate(made)}
    given = {id(p.rng) for p in made if p.rng is not None}
    others = [
        OtherKey(stream=r.stream, fold_in_data=list(r.suffix), folded=r.folded, key=key_data(r.key))
        for r in rec.rngs
        if id(r) not in given
    ]
    ctx.emit(params_initialized("linen", variables, created, seconds, timed, others))

    leaf_ids = {id(leaf) for leaf in jax.tree_util.tree_leaves(variables)}
    with ctx.stage("call"), recording_linen() as applied:
        try:
            out = model.apply(variables, *apply_args)
        except Exception as exc:
            if not shown_error(exc):
                raise
            ctx.emit(error_event("apply", exc))
            return
    with ctx.stage("trace"):
        closed = jax.make_jaxpr(lambda variables: model.apply(variables, *apply_args))(variables)
    ctx.emit(JaxprStaged(fun_name="apply", jaxpr=jaxpr_view(closed)))
    flat, _ = jax.tree_util.tree_flatten_with_path(variables)
    unused = [
        names(path)[1:]
        for (path, _), dead in zip(flat, unused_invars(closed), strict=True)
        if dead and names(path)[:1] == ["params"]
    ]
    reads: list[ParamRead] = []
    for r in applied.reads:
        if list(r.path) not in [x.path for x in reads]:
            reads.append(ParamRead(path=list(r.path), same_object=id(r.value) in leaf_ids))
    text, aval = output_fields(out)
    ctx.emit(
        ParamsApplied(
            api="linen",
            call=(
                "model.apply(variables, *"
                f"{'apply_args' if own_apply_args else inputs_name(ctx.snippet.namespace)})"
            ),
            reads=reads,
            unused=unused,
            output=text,
            output_aval=aval,
        )
    )


# --------------------------------------------------------------------------------------------
# nnx
# --------------------------------------------------------------------------------------------


def nnx_rngs(rngs: Any) -> Any:
    from flax import nnx

    if isinstance(rngs, nnx.Rngs):
        return rngs
    return nnx.Rngs(**rngs) if isinstance(rngs, dict) else nnx.Rngs(rngs)


def nnx_params(model: Any, rec: NnxRecorder) -> tuple[list[ParamCreated], list[OtherKey]]:
    """A ``param_created`` per ``nnx.Param`` made while building ``model``, in creation order:
    its path in the model's graph, and its key: of the draws made before it and not yet given
    to an earlier parameter, the latest that its ``<name>_init`` reproduces it from (else the
    latest). Also the draws no parameter got."""
    from flax import nnx

    paths = {id(node): path for path, node in nnx.iter_graph(model)}
    claimed: set[int] = set()
    out: list[ParamCreated] = []
    for v in rec.variables:
        if not isinstance(v.variable, nnx.Param) or id(v.variable) not in paths:
            continue
        path = [str(k) for k in paths[id(v.variable)]]
        init_fn = v.init_fns.get(f"{path[-1]}_init")
        value = v.value
        candidates = [i for i in range(v.draws_before - 1, -1, -1) if i not in claimed]
        chosen, ok = (candidates[0] if candidates else None), None
        if init_fn is not None and concrete(value):
            for i in candidates[:8]:
                shape_dtype = (np.shape(value), value.dtype)
                ok = reproduces(init_fn, rec.draws[i].key, shape_dtype, {}, value)
                if ok:
                    chosen = i
                    break
        draw = rec.draws[chosen] if chosen is not None else None
        if chosen is not None:
            claimed.add(chosen)
        out.append(
            ParamCreated(
                api="nnx",
                index=len(out),
                path=path,
                aval=first_aval(value),
                initializer=describe(init_fn) if init_fn is not None else None,
                key=key_data(draw.key) if draw else None,
                root_key=key_data(draw.stream_key) if draw else None,
                stream=draw.tag if draw else "params",
                fold_in_data=[draw.count] if draw and draw.count is not None else [],
                folded=draw.count if draw else None,
                reproduced=ok,
                preview=preview_value(value) if concrete(value) else None,
                line=v.line,
            )
        )
    others = [
        OtherKey(
            stream=d.tag,
            fold_in_data=[d.count] if d.count is not None else [],
            folded=d.count,
            key=key_data(d.key),
        )
        for i, d in enumerate(rec.draws)
        if i not in claimed
    ]
    return out, others


def run_nnx(
    ctx: ProbeContext,
    model_fn: Callable[..., Any],
    args: tuple[Any, ...],
    apply_args: tuple[Any, ...],
    rngs: Any,
) -> None:
    from flax import nnx

    timed: list[StageTimed] = []
    rec: NnxRecorder
    with ctx.stage("run"), stage_timers(timed.append), recording_nnx() as rec:
        start = time.perf_counter()
        model = model_fn(rngs=nnx_rngs(rngs))
        seconds = time.perf_counter() - start
    if not isinstance(model, nnx.Module):
        raise blame_line(
            InvalidSnippet(
                f"`model(rngs=...)` must build an nnx Module, got {type(model).__name__}"
            ),
            setting_line(ctx.snippet.source, "model"),
        )
    created, others = nnx_params(model, rec)
    for event in created:
        ctx.emit(event)
    state = nnx.state(model, nnx.Param)
    index = {tuple(e.path): e.index for e in created}
    ctx.emit(params_initialized("nnx", state, index, seconds, timed, others))

    graphdef, params, rest = nnx.split(model, nnx.Param, ...)  # type: ignore[misc]

    def call(p: Any) -> Any:
        return nnx.merge(graphdef, p, rest)(*apply_args)

    with ctx.stage("call"):
        out = call(params)
    with ctx.stage("trace"):
        closed = jax.make_jaxpr(call)(params)
    ctx.emit(JaxprStaged(fun_name="call", jaxpr=jaxpr_view(closed)))
    flat, _ = jax.tree_util.tree_flatten_with_path(params)
    unused = [
        names(path) for (path, _), dead in zip(flat, unused_invars(closed), strict=True) if dead
    ]
    text, aval = output_fields(out)
    ctx.emit(
        ParamsApplied(
            api="nnx",
            call="nnx.merge(graphdef, params, rest)(*args)",
            reads=[],
            unused=unused,
            output=text,
            output_aval=aval,
        )
    )
    ctx.emit(nnx_split(model, args))


def graph_node(node: Any) -> GraphNode:
    """One entry of a ``GraphDef``'s nodes (a ``NodeRef`` to a shared node has no type)."""
    kind = getattr(node, "type", None)
    index = getattr(node, "index", None)
    return GraphNode(
        kind=type(node).__name__,
        type_name=kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind)),
        index=index if isinstance(index, int) else None,
    )


def nnx_split(model: Any, args: tuple[Any, ...]) -> NnxStateSplit:
    """``nnx.split(model)`` and ``nnx.merge`` back, called on ``args`` beside the model."""
    from flax import nnx

    graphdef, state = nnx.split(model)
    nodes = [graph_node(n) for n in graphdef.nodes]
    leaves = [
        StateLeaf(
            path=[str(k) for k in path],
            variable_type=type(var).__name__,
            aval=aval_view(jax.typeof(var.get_value())),
        )
        for path, var in nnx.to_flat_state(state)
    ]
    merged = nnx.merge(graphdef, state)
    ours, theirs = model(*args), merged(*args)
    diffs = [
        float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)), initial=0.0))
        for a, b in zip(
            jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs), strict=True
        )
    ]
    return NnxStateSplit(
        graphdef_type=type(graphdef).__name__,
        nodes=nodes,
        leaves=leaves,
        merge_equal=trees_equal(ours, theirs),
        max_abs_diff=max(diffs, default=0.0),
    )
