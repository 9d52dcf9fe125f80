"""Batching one eqn at a time: JAX's batching rules run on the user's per-example jaxpr inside
the real ``jax.vmap``.

What JAX does in ``jax.vmap(f, in_axes, out_axes)(*args)`` (``jax._src.api.vmap`` ->
``batching.batch``): it checks ``in_axes`` against the positional arguments and the mapped sizes
against each other (``api._mapped_axis_size``: the errors "vmap in_axes must be ..." and "vmap got
inconsistent sizes ..."), wraps each mapped argument leaf in a ``batching.BatchTracer(trace, val,
batch_dim)`` whose ``aval`` is the per-example aval (the mapped axis removed), and runs ``f``.
Each primitive bound then lands in ``batching.BatchTrace.process_primitive``, which reads
``(val, batch_dim)`` of every input (``None`` = not mapped) and

* calls ``batching.fancy_primitive_batchers[p](axis_data, vals, dims, **params)`` when the
  primitive has a rule (even when no input is mapped), which binds the batched eqn(s) on the
  parent trace and returns ``(out, out_dims)``;
* binds the eqn unbatched when it has no rule and no input is mapped;
* raises ``NotImplementedError("Batching rule for '<p>' not implemented")`` otherwise.

Finally ``batching.matchaxis`` moves each output's batch dim to ``out_axes`` (a ``transpose``, or
a ``broadcast_in_dim`` for an unmapped output).

How we capture it:

1. :func:`map_inputs` calls ``jax.vmap(capture, in_axes)(*args)`` where ``capture`` (with ``f``'s
   signature, so JAX's errors name ``f``'s arguments) only records, for each argument leaf, the
   ``BatchTracer``'s ``batch_dim`` and ``aval``: the per-example avals are those JAX itself gives
   ``f`` (docs/design/0011-vmap-exhibit.md). Static positional arguments are passed through
   unchanged: ``f`` is closed over them and vmap sees the dynamic arguments only, with
   :func:`dynamic_in_axes` (an ``in_axes`` tuple with one entry per positional argument, the
   static ones included, has the static entries dropped; any other ``in_axes`` applies to the
   dynamic arguments), so the default ``in_axes=0`` works with an int static argument.
2. The per-example jaxpr is ``jax.make_jaxpr(f, static_argnums)`` at those avals.
3. :func:`capture_batching` interprets that jaxpr eqn by eqn (``jaxscope.internals.interpret``,
   binding as ``core.eval_jaxpr``, under the eqn's own source info) inside ``jax.vmap`` (the flat
   dynamic leaves, each with the batch dim JAX gave it) inside ``jax.make_jaxpr``; around each bind
   it reads ``batch_dim`` off the ``BatchTracer`` inputs and outputs and counts the eqns the
   outermost ``pe.JaxprStackFrame`` gains (those the rule emitted). The batched jaxpr shown is JAX's
   own ``jax.make_jaxpr(jax.vmap(f, in_axes, out_axes), static_argnums)(*args)``; when the
   interpretation prints the same text, the counts attribute each of its eqns to a step.

:func:`observe_vmap` is an independent observation for tests: it patches
``BatchTrace.process_primitive`` during a plain ``jax.vmap`` (after ``jax.clear_caches()``, since
batched inner jaxprs are cached) and records the dims of the calls made on vmap's own trace.

Dynamic keyword arguments are closed over (not mapped); ``jax.vmap`` would map them on axis 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import numpy as np
from jax._src import core, source_info_util
from jax._src.interpreters import batching

from jaxscope.finite_diff import compare, tolerance
from jaxscope.internals.ad_rules import batch_rule_view
from jaxscope.internals.calling import CallPlan, concrete_args
from jaxscope.internals.interpret import Env, interpret
from jaxscope.internals.patching import patched
from jaxscope.internals.recording import PATCH_LOCK as _patch_lock
from jaxscope.internals.recording import CountingHook, counting_outer_eqns
from jaxscope.internals.views import (
    aval_view,
    eqn_view,
    jaxpr_view,
    preview_value,
    print_with_context,
    snippet_source,
)
from jaxscope.protocol import ArrayPreview, AvalView, JaxprView, RuleView, SourceLoc

source_info_util.register_exclusion(__file__)

# At most this many steps are reported (one event each).
MAX_STEPS = 2000
# Primitives that only move, insert or broadcast axes: emitted beside the batched eqn they are
# what the rule did to line the batch axes up.
MOVE_PRIMITIVES = frozenset(
    {"transpose", "broadcast_in_dim", "reshape", "squeeze", "expand_dims", "copy", "copy_p"}
)

NOT_MAPPED_NOTE = (
    "No input is mapped and the primitive has no batching rule, so BatchTrace.process_primitive "
    "binds it unbatched: the output is not mapped either."
)
ALL_UNMAPPED_NOTE = (
    "No input is mapped: the rule still runs (BatchTrace.process_primitive calls it whenever the "
    "primitive has one) and computes the eqn once, for every example."
)
INNER_NOTE = (
    "This eqn holds an inner jaxpr: its rule batches the inner jaxpr as a whole (the eqns it "
    "emitted are shown, not a step per inner eqn)."
)


# ---------------------------------------------------------------------------- records
# What the walk returns (design 0059): the vmap probe makes its events of these records, field
# by field (``MappedInput``, ``BatchRuleApplied``, ``BatchedJaxprStaged``; a contract test
# compares the fields).


@dataclass(frozen=True)
class MappedInputRecord:
    """How ``jax.vmap`` mapped one argument leaf: ``bdim`` its batch dim (``None``: not
    mapped), ``aval`` the whole leaf's and ``example_aval`` the per-example aval JAX gave ``f``;
    a static argument is ``static`` with neither."""

    path: str
    bdim: int | None = None
    aval: AvalView | None = None
    example_aval: AvalView | None = None
    static: bool = False


@dataclass(frozen=True)
class BatchStepRecord:
    """One per-example eqn batched: its rule (or ``mechanism`` ``not_mapped``/``failed``), the
    batch dims and avals of its inputs and outputs, per example and batched, and the eqns of
    the batched jaxpr it emitted (``emitted``, their indices, the ``moves`` among them)."""

    index: int
    primitive: str
    source: SourceLoc | None
    rule: RuleView | None
    mechanism: Literal["rule", "not_mapped", "failed"]
    note: str | None
    in_vars: list[str | None]
    out_vars: list[str]
    in_bdims: list[int | None]
    out_bdims: list[int | None]
    example_in_avals: list[AvalView]
    example_out_avals: list[AvalView]
    in_avals: list[AvalView]
    out_avals: list[AvalView]
    emitted: list[str]
    batched_eqn_indices: list[int]
    moves: list[str]


@dataclass(frozen=True)
class BatchedJaxprRecord:
    """JAX's own batched jaxpr, ``jax.vmap``'s outputs and whether the step-by-step
    interpretation agrees with both; ``steps_left_out`` eqns past :data:`MAX_STEPS`."""

    in_axes: str
    out_axes: str
    jaxpr: JaxprView
    outputs: list[ArrayPreview]
    matches_jax_vmap: bool
    interpreted_text_equal: bool
    result_bdims: list[int | None]
    output_moves: list[str]
    steps_left_out: int


# ---------------------------------------------------------------------------- inputs


@dataclass
class MappedArgs:
    """What :func:`map_inputs` found: per positional argument, the value ``f`` sees per example
    (a ``jax.ShapeDtypeStruct`` pytree for a dynamic argument, the value itself for a static
    one); the flat dynamic leaves with their batch dims; the mapped size."""

    example_args: tuple[Any, ...]
    leaves: list[Any]
    leaf_bdims: list[int | None]
    axis_size: int
    inputs: list[MappedInputRecord]


def _bdim_of(x: Any) -> int | None:
    if isinstance(x, batching.BatchTracer):
        d = x.batch_dim
        return d if isinstance(d, int) else None
    return None


def _batched_aval(x: Any) -> Any:
    """The aval of the whole batched value (``BatchTracer.val``), or of ``x`` itself."""
    if isinstance(x, batching.BatchTracer):
        return core.typeof(x.val)
    return core.typeof(x)


def map_inputs(plan: CallPlan, in_axes: Any) -> MappedArgs:
    """Run ``jax.vmap(capture, in_axes)(*args)`` (``capture`` has ``f``'s signature) and read
    each argument leaf's batch dim and per-example aval off the tracer JAX made of it.

    Raises JAX's own ``ValueError`` for ``in_axes`` that do not match the arguments, inconsistent
    mapped sizes, or an axis beyond an argument's rank."""
    static = set(plan.normalized_argnums())
    args = concrete_args(plan.args)
    seen: list[Any] = []
    sizes: list[int] = []

    def capture(*xs: Any) -> tuple[()]:
        seen.extend(xs)
        for leaf in jax.tree.leaves(xs):
            if isinstance(leaf, batching.BatchTracer):
                sizes.append(int(leaf._trace.axis_data.size))
        return ()

    if static:
        # The static arguments stay closed over: vmap sees the dynamic ones only.
        capture.__name__ = capture.__qualname__ = plan.fun_name
        dynamic = tuple(a for i, a in enumerate(args) if i not in static)
        jax.vmap(capture, in_axes=dynamic_in_axes(plan, in_axes))(*dynamic)
    else:
        # f's signature (through __wrapped__): JAX's error messages name f's arguments.
        functools.update_wrapper(capture, plan.f)
        jax.vmap(capture, in_axes=in_axes)(*args)

    example_args: list[Any] = []
    leaves: list[Any] = []
    leaf_bdims: list[int | None] = []
    inputs: list[MappedInputRecord] = []
    traced_of = iter(seen)
    for i, arg in enumerate(args):
        if i in static:
            example_args.append(arg)
            inputs.append(MappedInputRecord(path=f"args[{i}]", static=True))
            continue
        traced = next(traced_of)
        flat_arg, _ = jax.tree_util.tree_flatten_with_path(arg)
        flat_seen, tree = jax.tree.flatten(traced)
        structs = []
        for (path, leaf), t in zip(flat_arg, flat_seen, strict=True):
            bdim = _bdim_of(t)
            example = core.typeof(t)
            structs.append(
                jax.ShapeDtypeStruct(example.shape, example.dtype, weak_type=example.weak_type)
            )
            leaves.append(leaf)
            leaf_bdims.append(bdim)
            inputs.append(
                MappedInputRecord(
                    path=f"args[{i}]" + jax.tree_util.keystr(path),
                    bdim=bdim,
                    aval=aval_view(core.typeof(leaf)),
                    example_aval=aval_view(example),
                )
            )
        example_args.append(jax.tree.unflatten(tree, structs))
    size = sizes[0] if sizes else 0
    return MappedArgs(tuple(example_args), leaves, leaf_bdims, size, inputs)


# ---------------------------------------------------------------------------- capture


@dataclass
class _Step:
    index: int
    eqn: Any
    in_bdims: list[int | None]
    in_avals: list[Any]
    out_bdims: list[int | None] = field(default_factory=list)
    out_avals: list[Any] = field(default_factory=list)


@dataclass
class BatchCapture:
    """What :func:`capture_batching` returns: the steps' and the batched jaxpr's records (the
    probe's events) and the jaxprs."""

    steps: list[BatchStepRecord]
    staged: BatchedJaxprRecord
    batched_jaxpr: Any
    interpreted_jaxpr: Any
    truncated: int = 0


class _Recorder(CountingHook):
    """The per-example jaxpr's walk under ``jax.vmap``: each eqn bound as ``core.eval_jaxpr``
    binds it (``current[0]`` naming it meanwhile, for ``counting_outer_eqns``), the batch dims
    and batched avals of its inputs and outputs recorded as a :class:`_Step`."""

    def __init__(self, steps: list[_Step], current: list[int | None]) -> None:
        self.steps = steps
        super().__init__(current)

    def before(self, index: int, eqn: Any, invals: list[Any], env: Env) -> bool:
        self.steps.append(
            _Step(
                index=index,
                eqn=eqn,
                in_bdims=[_bdim_of(x) for x in invals],
                in_avals=[_batched_aval(x) for x in invals],
            )
        )
        return False

    def after(self, index: int, eqn: Any, invals: list[Any], outvals: list[Any], env: Env) -> bool:
        step = self.steps[-1]
        step.out_bdims.extend(_bdim_of(o) for o in outvals)
        step.out_avals.extend(_batched_aval(o) for o in outvals)
        return False


def _interpreter(
    example: Any,
    out_tree: Any,
    steps: list[_Step],
    current: list[int | None],
    result_bdims: list[int | None],
) -> Callable[..., Any]:
    """The function ``jax.vmap`` runs: the closed per-example jaxpr eqn by eqn
    (:func:`interpret`), recording the batch dims around each bind (:class:`_Recorder`)."""
    recorder = _Recorder(steps, current)

    def interp(*leaves: Any) -> Any:
        outs = interpret(example.jaxpr, example.consts, leaves, recorder).outvals
        assert outs is not None  # the recorder never stops the walk
        result_bdims.extend(_bdim_of(o) for o in outs)
        return jax.tree.unflatten(out_tree, outs)

    return interp


def _dtype_name(arr: np.ndarray) -> str:
    return str(jax.dtypes.canonicalize_dtype(arr.dtype))


def _previews(tree: Any) -> list[ArrayPreview]:
    out = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        arr = np.asarray(leaf)
        out.append(
            ArrayPreview(
                path="out" + jax.tree_util.keystr(path),
                shape=list(arr.shape),
                dtype=_dtype_name(arr),
                preview=preview_value(arr),
            )
        )
    return out


def _equal(a: list[Any], b: list[Any]) -> bool:
    """Same leaves: shapes and dtypes equal, values bit-identical or, for floating leaves,
    within the dtype's tolerance (``finite_diff.compare``): the interpreted jaxpr runs jitted
    (XLA fuses and reorders) while ``jax.vmap`` runs op by op, and the two round differently
    (1.5e-8 on a float32 scan RNN step): that is not a batching difference."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        xa, ya = np.asarray(x), np.asarray(y)
        if xa.shape != ya.shape or xa.dtype != ya.dtype:
            return False
        if np.array_equal(xa, ya, equal_nan=xa.dtype.kind in "fc"):
            continue
        if xa.dtype.kind not in "fc" or not compare(xa, ya, None, tolerance(xa.dtype))[1]:
            return False
    return True


def dynamic_in_axes(plan: CallPlan, in_axes: Any) -> Any:
    """``in_axes`` for the dynamic positional arguments (the static ones are closed over, never
    mapped): a tuple/list with one entry per positional argument, the static ones included, has
    the static entries dropped (whatever they say); anything else (an int, ``None``, a tuple with
    one entry per dynamic argument) applies to the dynamic arguments as it is."""
    static = set(plan.normalized_argnums())
    if static and isinstance(in_axes, (tuple, list)) and len(in_axes) == len(plan.args):
        return tuple(a for i, a in enumerate(in_axes) if i not in static)
    return in_axes


def closed_over_static(
    plan: CallPlan, fun: Callable[..., Any], args: tuple[Any, ...]
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``(f_closed, dynamic)``: ``f_closed(*dynamic) == fun(*args)`` with the static positional
    arguments of ``args`` (at ``plan.static_argnums``) closed over."""
    static = set(plan.normalized_argnums())

    def f_closed(*dynamic: Any) -> Any:
        it = iter(dynamic)
        return fun(*[args[i] if i in static else next(it) for i in range(len(args))])

    f_closed.__name__ = f_closed.__qualname__ = plan.fun_name
    return f_closed, tuple(a for i, a in enumerate(args) if i not in static)


def vmapped(plan: CallPlan, in_axes: Any, out_axes: Any) -> Callable[..., Any]:
    """``jax.vmap(f, in_axes, out_axes)`` with the dynamic keyword arguments closed over; called
    with every positional argument. With static arguments it is ``jax.vmap(f_closed,
    dynamic_in_axes(plan, in_axes), out_axes)(*dynamic)``, ``f_closed`` closed over the static
    arguments (:func:`closed_over_static`): a static argument is never mapped."""
    fun = plan.fun
    if plan.kwargs:
        fun = functools.partial(fun, **jax.tree.map(lambda x: concrete_args((x,))[0], plan.kwargs))
    if not plan.static_argnums:
        return jax.vmap(fun, in_axes=in_axes, out_axes=out_axes)
    axes = dynamic_in_axes(plan, in_axes)

    def call(*args: Any) -> Any:
        f_closed, dynamic = closed_over_static(plan, fun, args)
        return jax.vmap(f_closed, in_axes=axes, out_axes=out_axes)(*dynamic)

    return call


def batched_jaxpr(plan: CallPlan, in_axes: Any, out_axes: Any) -> Any:
    """``jax.make_jaxpr(jax.vmap(f, in_axes, out_axes), static_argnums)(*args)``; with static
    arguments its text is that of ``jax.make_jaxpr(jax.vmap(f_closed, dynamic_in_axes,
    out_axes))(*dynamic)`` (see :func:`vmapped`)."""
    return jax.make_jaxpr(vmapped(plan, in_axes, out_axes), static_argnums=plan.static_argnums)(
        *concrete_args(plan.args)
    )


def example_jaxpr(plan: CallPlan, mapped: MappedArgs) -> Any:
    """The per-example jaxpr: ``jax.make_jaxpr(f, static_argnums)`` at the per-example avals
    (dynamic keyword arguments closed over)."""
    fun = plan.fun
    if plan.kwargs:
        fun = functools.partial(fun, **jax.tree.map(lambda x: concrete_args((x,))[0], plan.kwargs))
    return jax.make_jaxpr(fun, static_argnums=plan.static_argnums, return_shape=True)(
        *mapped.example_args
    )


FAILED_NOTE = (
    "JAX raised while batching this eqn (the error panel has its message): no batched eqn was "
    "emitted for it, and the eqns after it were never reached."
)
NO_RULE_NOTE = (
    "The primitive has no batching rule (nothing in batching.fancy_primitive_batchers) and an "
    "input is mapped, so BatchTrace.process_primitive raised NotImplementedError."
)


def _step_event(
    step: _Step,
    example_ctx: Any,
    indices: list[int],
    emitted_texts: list[str],
    moves: list[str],
    *,
    failed: bool = False,
) -> BatchStepRecord:
    """The record of ``step``; ``failed``: JAX raised on it."""
    eqn = step.eqn
    has_rule = eqn.primitive in batching.fancy_primitive_batchers
    has_inner = any(
        isinstance(v, (core.Jaxpr, core.ClosedJaxpr))
        for val in eqn.params.values()
        for v in (val if isinstance(val, tuple) else (val,))
    )
    all_unmapped = all(d is None for d in step.in_bdims)
    note = (
        (FAILED_NOTE if has_rule or all_unmapped else NO_RULE_NOTE)
        if failed
        else NOT_MAPPED_NOTE
        if not has_rule
        else ALL_UNMAPPED_NOTE
        if all_unmapped
        else INNER_NOTE
        if has_inner
        else None
    )
    return BatchStepRecord(
        index=step.index,
        primitive=eqn.primitive.name,
        source=snippet_source(eqn.source_info.traceback),
        rule=batch_rule_view(eqn.primitive) if has_rule else None,
        mechanism="failed" if failed else "rule" if has_rule else "not_mapped",
        note=note,
        in_vars=[
            None if isinstance(v, core.Literal) else str(core.pp_var(v, example_ctx))
            for v in eqn.invars
        ],
        out_vars=[str(core.pp_var(v, example_ctx)) for v in eqn.outvars],
        in_bdims=step.in_bdims,
        out_bdims=step.out_bdims,
        example_in_avals=[aval_view(v.aval) for v in eqn.invars],
        example_out_avals=[aval_view(v.aval) for v in eqn.outvars],
        in_avals=[aval_view(a) for a in step.in_avals],
        out_avals=[aval_view(a) for a in step.out_avals],
        emitted=emitted_texts,
        batched_eqn_indices=indices,
        moves=moves,
    )


def capture_batching(
    plan: CallPlan,
    mapped: MappedArgs,
    example: Any,
    out_shape: Any,
    in_axes: Any,
    out_axes: Any,
    texts: tuple[str, str],
    emit_partial: Callable[[BatchStepRecord], None] | None = None,
) -> BatchCapture:
    """Interpret ``example`` (the per-example ClosedJaxpr) eqn by eqn inside ``jax.vmap`` and
    stage JAX's own batched jaxpr; see the module docstring. ``texts``: ``in_axes``/``out_axes``
    as the user wrote them.

    When the interpretation fails, ``emit_partial`` (if given) receives a step record for each
    eqn batched before the failure and then one with ``mechanism="failed"`` for the eqn JAX
    raised on (its inputs' batch dims, no outputs), before the error is raised.

    Raises what ``jax.vmap(f, in_axes, out_axes)`` raises (the real call is made again when the
    interpretation fails, so the error and its user line are JAX's own)."""
    steps: list[_Step] = []
    origin: list[int | None] = []
    current: list[int | None] = [None]
    result_bdims: list[int | None] = []
    out_tree = jax.tree.structure(out_shape)
    interp = _interpreter(example, out_tree, steps, current, result_bdims)
    in_dims = tuple(mapped.leaf_bdims)
    batched_interp = jax.vmap(interp, in_axes=in_dims, out_axes=out_axes)
    try:
        with counting_outer_eqns(origin, current):
            interpreted = jax.make_jaxpr(batched_interp)(*mapped.leaves)
    except Exception:
        if emit_partial is not None:
            # The steps that ran are shown, then the eqn JAX failed on (the last step begun).
            # No batched jaxpr exists, so which eqns each step emitted is not attributed.
            _, example_ctx = print_with_context(example.jaxpr)
            for k, step in enumerate(steps[:MAX_STEPS]):
                failed = k == len(steps) - 1 and len(step.out_bdims) < len(step.eqn.outvars)
                emit_partial(_step_event(step, example_ctx, [], [], [], failed=failed))
        # JAX's own vmap of the user's f raises the error with the user's frames on it.
        batched_jaxpr(plan, in_axes, out_axes)
        raise

    official = batched_jaxpr(plan, in_axes, out_axes)
    text_equal = str(interpreted) == str(official)
    attributed = text_equal and len(origin) == len(interpreted.jaxpr.eqns)

    args = concrete_args(plan.args)
    expected = vmapped(plan, in_axes, out_axes)(*args)
    got = jax.jit(core.jaxpr_as_fun(interpreted))(*mapped.leaves)
    matches = _equal(jax.tree.leaves(expected), list(got))

    official_view = jaxpr_view(official)
    _, pp_ctx = print_with_context(interpreted.jaxpr)
    texts_of = (
        [e.text for e in official_view.eqns]
        if attributed
        else [eqn_view(k, e, pp_ctx).text for k, e in enumerate(interpreted.jaxpr.eqns)]
    )
    emitted: dict[int | None, list[int]] = {}
    for k, o in enumerate(origin):
        emitted.setdefault(o, []).append(k)

    _, example_ctx = print_with_context(example.jaxpr)
    events: list[BatchStepRecord] = []
    for step in steps[:MAX_STEPS]:
        indices = emitted.get(step.index, []) if attributed else []
        emitted_texts = [texts_of[k] for k in indices]
        moves = [
            t
            for k, t in zip(indices, emitted_texts, strict=True)
            if interpreted.jaxpr.eqns[k].primitive.name in MOVE_PRIMITIVES
            and interpreted.jaxpr.eqns[k].primitive.name != step.eqn.primitive.name
        ]
        events.append(_step_event(step, example_ctx, indices, emitted_texts, moves))
    output_moves = [texts_of[k] for k in emitted.get(None, [])] if attributed else []
    staged = BatchedJaxprRecord(
        in_axes=texts[0],
        out_axes=texts[1],
        jaxpr=official_view,
        outputs=_previews(expected),
        matches_jax_vmap=matches,
        interpreted_text_equal=text_equal,
        result_bdims=result_bdims,
        output_moves=output_moves,
        steps_left_out=max(0, len(steps) - MAX_STEPS),
    )
    return BatchCapture(
        steps=events,
        staged=staged,
        batched_jaxpr=official,
        interpreted_jaxpr=interpreted,
        truncated=staged.steps_left_out,
    )


# ---------------------------------------------------------------------------- observation


def batching_rules() -> dict[Any, Any]:
    """JAX's batching rule table, for tests: ``batching.fancy_primitive_batchers`` (primitive ->
    rule; ``batching.primitive_batchers`` is a write-only proxy that stores into it)."""
    return batching.fancy_primitive_batchers


@dataclass
class Observed:
    """One ``BatchTrace.process_primitive`` call on vmap's own trace."""

    primitive: str
    in_bdims: list[int | None]
    out_bdims: list[int | None]


@dataclass
class _Call:
    primitive: Any
    params: Any
    trace: Any
    in_bdims: list[int | None]
    out_bdims: list[int | None] = field(default_factory=list)
    children: list[_Call] = field(default_factory=list)


def _inlined(call: _Call) -> bool:
    return call.primitive.name == "jit" and bool(call.params.get("inline"))


def observe_vmap(
    fun: Callable[..., Any],
    in_axes: Any,
    out_axes: Any,
    args: tuple[Any, ...],
    static_argnums: tuple[int, ...] = (),
    until_error: bool = False,
) -> list[Observed]:
    """Run ``jax.make_jaxpr(jax.vmap(fun, in_axes, out_axes), static_argnums)(*args)`` after
    ``jax.clear_caches()`` with ``BatchTrace.process_primitive`` patched, and return the calls
    made on vmap's own ``BatchTrace`` while ``fun`` ran, in order, with the dims read as
    ``to_batch_info`` reads them and off the outputs.

    A ``jit`` eqn with ``inline=True`` (``jnp`` functions such as ``multiply``) is inlined by
    ``make_jaxpr``, so the per-example jaxpr holds its inner eqns: such a call is replaced by the
    calls on the ``BatchTrace`` its batching rule created for the inner jaxpr (recursively; a
    cached inner batching reuses an earlier expansion of the same jaxpr and dims).

    ``until_error``: when ``jax.vmap`` raises, return the calls made until then (the last one,
    the call that raised, with no ``out_bdims``) instead of raising."""
    jax.clear_caches()
    roots: list[_Call] = []
    owner: dict[int, _Call | None] = {}
    stack: list[_Call] = []
    inside = [False]
    root_trace: list[Any] = []
    orig = batching.BatchTrace.process_primitive

    def process_primitive(self: Any, p: Any, tracers: Any, params: Any, /) -> Any:
        if not root_trace:
            root_trace.append(self)
        if id(self) not in owner:
            owner[id(self)] = stack[-1] if stack else None
        call = _Call(p, params, self, [self.to_batch_info(t)[1] for t in tracers])
        parent = owner[id(self)]
        if self is root_trace[0]:
            if inside[0]:
                roots.append(call)
        elif parent is not None:
            parent.children.append(call)
        stack.append(call)
        try:
            out = orig(self, p, tracers, params)
        finally:
            stack.pop()
        outs = out if p.multiple_results else [out]
        call.out_bdims = [
            o.batch_dim if isinstance(o, batching.BatchTracer) and o._trace is self else None
            for o in outs
        ]
        return out

    def marked(*a: Any, **k: Any) -> Any:
        inside[0] = True
        try:
            return fun(*a, **k)
        finally:
            inside[0] = False

    functools.update_wrapper(marked, fun)
    with _patch_lock, patched(batching.BatchTrace, process_primitive=process_primitive):
        try:
            jax.make_jaxpr(
                jax.vmap(marked, in_axes=in_axes, out_axes=out_axes), static_argnums=static_argnums
            )(*args)
        except Exception:
            if not until_error:
                raise

    expanded: dict[tuple[int, tuple[int | None, ...]], list[Observed]] = {}

    def flat(calls: list[_Call]) -> list[Observed]:
        out: list[Observed] = []
        for c in calls:
            if _inlined(c):
                key = (id(c.params["jaxpr"]), tuple(c.in_bdims))
                if c.children:
                    expanded[key] = flat(c.children)
                if key in expanded:
                    out.extend(expanded[key])
                    continue
            out.append(Observed(c.primitive.name, c.in_bdims, c.out_bdims))
        return out

    return flat(roots)
