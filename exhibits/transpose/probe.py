"""The transpose exhibit's probe: the backward pass of ``jax.grad(f)``, one linear eqn at a time,
through JAX's own transpose rules (``jaxscope.internals.transpose_walk``).

Events, in order, when the linearisation and the seed work (every differentiated leaf floating;
the summary the page shows first comes first and live, issue 36, docs/design/0083):

* stage ``trace``, then :class:`LinearJaxprStaged`: the linear jaxpr ``ad.linearize(...,
  is_vjp=True)`` made (as ``jax.vjp`` does), residuals as constvars, with their values, sent as
  soon as it is made.
* stage ``run``: one :class:`TransposeStepped` per linear eqn, last eqn first, each sent as the
  walk makes it.
* two :class:`GradAttempted` events. ``jit``: ``jax.jit(jax.grad(f, argnums),
  static_argnums).trace(*args)`` (abstract arguments, as ``jax.jit(jax.grad(f))`` traces);
  ``eager``: ``jax.grad(f, argnums)(*args)``. A failure carries JAX's error, the snippet line and
  a plain explanation (``exhibits.transpose.explain.ad_help``). When only ``jit`` fails (a
  traced value used as a shape or in Python control flow) the walk above is the eager version's,
  which saw concrete values. When the eager gradient fails the run ends in ``run_failed`` with
  that error (the user's line), except for a non-scalar output: the walk above is then from an
  all-ones cotangent (``jax.vjp``; the gradient of ``sum(f)``).
* :class:`GradientChecked`: the walk's cotangents beside ``jax.grad`` and ``jax.vjp`` (bit for
  bit) and central finite differences in float64 (``jaxscope.finite_diff``), with the error of
  the same walk run in float64.

When the walk raises (a primitive with no transpose rule, a ``while_loop``, a ``custom_vjp``
``bwd`` that raises), the step whose rule raised is sent last, with the error, then the two
attempts, and the run ends as it did when the attempts came first (:func:`_fail_after_walk`):
with jax.grad's own error marked ``during`` "while transposing <primitive>" when the walk raised
the same (class and message); with jax.grad's error in stage ``trace`` when it raised another;
with the walk's error, so marked, when jax.grad worked or the output is one non-scalar float.

When the linearisation or the seed raise (or a differentiated leaf is an integer), nothing is
sent before the attempts: they come first, in stage ``trace``, and their errors decide: the
eager gradient's error ends the run (as above; :func:`failing_walk` for one raised in its
backward pass). Otherwise the linear jaxpr, the steps (sent as walked) and the check follow.

``argnums``: every positional argument that is not static and whose leaves are all floating
(at least one leaf); a snippet may set ``argnums`` (an int or a tuple, negative indices as in
``jax.grad``) to choose, and then JAX's own error for an int argument is what the user sees.
A bad ``argnums``, ``argnums=()``, no floating argument at all, or a complex one chosen end in
``invalid_snippet`` (``jaxscope.grad_argnums``): the exhibit walks real gradients only.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal, NoReturn

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.exhibit_api import (
    CallPlan,
    Linearized,
    OutputRule,
    ProbeContext,
    TransposeStepRecord,
    WalkResult,
    aval_view,
    block_until_ready,
    call_name,
    central_differences,
    concrete_args,
    count_eqns,
    custom_rules_on_path,
    describe_failure,
    exception_text,
    grad_seed,
    inside,
    is_float_leaf,
    linearize_vjp,
    mark_during,
    narrowest_float,
    note_program_size,
    noting_caches,
    plan_call,
    walk_scan_body,
    walk_transpose,
)
from jaxscope.exhibit_api import choose_argnums as grad_argnums

from exhibits.transpose.events import (
    VALUES_PER_EVENT,
    CustomRuleOnPath,
    FdSample,
    GradAttempted,
    GradientChecked,
    GradientLeaf,
    GradientValuesSent,
    InnerStepView,
    InnerWalkView,
    LinearJaxprStaged,
    OutputLeafView,
    TransposeCallOpened,
)
from exhibits.transpose.explain import ad_help
from exhibits.transpose.fd_check import (
    another_function,
    compare_fd,
    headline,
    nonfinite_positions,
)
from exhibits.transpose.walk_events import linear_staged, stepped

# The stepper shows one event per step: a walk longer than this is cut (the gradient is still
# the full walk's).
MAX_STEP_EVENTS = 2000
# A call step's inner walk: at most this many steps shown per walk, and for a scan the first
# iterations walked (the last ones run: scan's transpose walks them last first).
MAX_INNER_STEPS = 200
MAX_INNER_ITERATIONS = 3
# At most this many call steps are opened per run (each re-walks its body eagerly).
MAX_OPENED_CALLS = 64


def run(ctx: ProbeContext) -> None:
    """Run the transpose exhibit on ``ctx.snippet`` (user exceptions propagate unchanged).

    The summary first, live: when the linearisation and the seed work (every differentiated leaf
    floating), the linear jaxpr is sent at once and each step as the walk makes it, before the
    two attempts (:func:`_linearized`, :func:`_walk_live`; docs/design/0083). Otherwise the
    attempts come first, as their errors decide the outcome (:func:`_attempts`). A walk that
    raises ends the run as it did when the attempts came first (:func:`_fail_after_walk`)."""
    rule = OutputRule()
    plan = ruled_plan(plan_call(ctx.snippet), rule)
    args = concrete_args(plan.args)
    argnums = choose_argnums(plan, args, ctx.snippet.namespace.get("argnums"))
    fun, diff_args = dynamic_fun(plan, args, argnums)
    attempted: _Attempted | None = None
    with ctx.stage("trace"):
        linearized = _linearized(ctx, fun, diff_args)
        if linearized is None:
            attempted = _attempts(ctx, plan, args, argnums, rule)
            if attempted.eager_error is not None and not _non_scalar_output(rule):
                _fail_as_jax_grad(ctx, fun, diff_args, attempted.eager_error)
            lin = linearize_vjp(fun, diff_args, previews_on_demand=ctx.on_demand)
            seed, seed_text = grad_seed(lin)
        else:
            lin, seed, seed_text = linearized
        # Built before the steps: the residuals' views are made here, and the steps share them.
        staged = linear_staged(lin)
    staged.output_leaf = output_leaf_view(rule)
    ctx.emit(staged)
    with ctx.stage("run"):
        if attempted is None:
            result = _walk_live(ctx, lin, seed)
            if isinstance(result, _WalkFailed):
                # The attempts still run (the page shows jax.grad's own error, explained); the
                # run then ends as when they came first.
                attempted = _attempts(ctx, plan, args, argnums, rule)
                _fail_after_walk(ctx, result, attempted, rule)
            # The attempts after the summary; their outcome as before (the eager attempt's
            # error ends the run unless the output is one non-scalar float).
            attempted = _attempts(ctx, plan, args, argnums, rule)
            if attempted.eager_error is not None and not _non_scalar_output(rule):
                raise attempted.eager_error
        else:
            result = _walk_streamed(ctx, lin, seed)
        traced, eager = attempted.traced, attempted.eager
        gradient = lin.in_tree.unflatten(result.cotangents)
        checked = check_gradient(
            plan,
            args,
            argnums,
            gradient,
            seed,
            seed_text,
            jax_grad=eager[0] if eager else None,
            program_eqns=len(traced[0].jaxpr.eqns) if traced else len(lin.jaxpr.eqns),
            compute_dtype=narrowest_float(traced[0].jaxpr if traced else lin.jaxpr),
        )
        blame_custom_rules(checked, lin.jaxpr)
        checked.steps_left_out = max(0, len(result.steps) - MAX_STEP_EVENTS)
        ctx.emit(checked)
        if not ctx.on_demand:
            # A run that prints whole artefacts (the CLI's) gets the leaves the check summarised.
            _emit_all(ctx, values_sent(checked, gradient))


@dataclasses.dataclass
class _Attempted:
    """The two attempts' results: ``traced`` the ``jit`` trace (empty when it failed), ``eager``
    the eager gradient (empty when it failed: ``eager_error``)."""

    traced: list[Any]
    eager: list[Any]
    eager_error: Exception | None


def _attempts(
    ctx: ProbeContext,
    plan: CallPlan,
    args: tuple[Any, ...],
    argnums: Sequence[int],
    rule: OutputRule,
) -> _Attempted:
    """The ``jit`` attempt, then the eager one, each with its :class:`GradAttempted`."""
    traced: list[Any] = []
    _attempt(ctx, "jit", lambda: traced.append(_jit_grad(plan, args, argnums)), rule)
    if traced:
        # The grad jaxpr's size, its inner jaxprs' eqns included (a jitted model is a few
        # call eqns): the eager attempt, the linearisation and the walk that follow take
        # time in proportion (the limits grow now, not at the first jaxpr event).
        note_program_size(count_eqns(traced[0].jaxpr.jaxpr))
    # The eager gradient is kept: it is the jax.grad the walk is compared with, bit for bit.
    eager: list[Any] = []
    eager_error = _attempt(ctx, "eager", lambda: eager.append(_grad(plan, args, argnums)), rule)
    return _Attempted(traced, eager, eager_error)


def _fail_as_jax_grad(
    ctx: ProbeContext, fun: Callable[..., Any], diff_args: tuple[Any, ...], error: Exception
) -> NoReturn:
    """The eager ``jax.grad`` raised ``error`` (and the output is not one non-scalar float):
    the linear jaxpr and the walk up to the step whose rule raised it, then ``error`` marked
    ``during`` that step (:func:`failing_walk`); ``error`` itself when jax.grad failed before
    its backward pass."""
    failing = failing_walk(fun, diff_args, error)
    if failing is None:  # jax.grad failed before its backward pass: nothing to walk
        raise error
    staged, events, primitive = failing
    ctx.emit(staged)
    with ctx.stage("run"):
        for event in events:
            ctx.emit(event)
        raise mark_during(error, _transposing(primitive))


def _linearized(
    ctx: ProbeContext, fun: Callable[..., Any], diff_args: tuple[Any, ...]
) -> tuple[Linearized, list[Any], str] | None:
    """The linearisation and the seed, made before the attempts; ``None`` when a differentiated
    leaf is not floating (``jax.grad`` refuses it: its attempt says so first), or when the
    linearisation or the seed raise: then the attempts come first (their errors decide what the
    user sees) and it is made again after them. Nothing is sent here."""
    if not all(is_float_leaf(x) for x in jax.tree.leaves(diff_args)):
        return None
    try:
        lin = linearize_vjp(fun, diff_args, previews_on_demand=ctx.on_demand)
        seed, seed_text = grad_seed(lin)
    except Exception:  # made again after the attempts, which show its error
        return None
    # The linear jaxpr's size (its inner jaxprs' eqns included): the walk, the attempts and the
    # check take time in proportion (the jit attempt notes the grad jaxpr's, larger, later).
    note_program_size(count_eqns(lin.jaxpr))
    return lin, seed, seed_text


@dataclasses.dataclass
class _WalkFailed:
    """A live walk that raised ``error`` (already sent: its steps, and ``failed``, the step whose
    rule raised, when a rule raised it)."""

    error: Exception
    failed: TransposeStepRecord | None


def _walk_live(ctx: ProbeContext, lin: Linearized, seed: list[Any]) -> WalkResult | _WalkFailed:
    """The walk before the attempts, each step's events sent as it is made; when it raises, the
    step whose rule raised is sent last and the error returned (the attempts decide, after it,
    which error ends the run: :func:`_fail_after_walk`)."""
    emitted = _WalkEvents(lin)
    try:
        return walk_transpose(lin, seed, lambda r: _emit_all(ctx, emitted.step(r)), emitted.fail)
    except Exception as exc:
        failed = _WalkFailed(exc, emitted.failed)
    # Outside the except block: an error raised later has no walk error as its context.
    if failed.failed is not None:
        ctx.emit(stepped(failed.failed))
    return failed


def _fail_after_walk(
    ctx: ProbeContext, walk: _WalkFailed, attempted: _Attempted, rule: OutputRule
) -> NoReturn:
    """End a run whose live walk raised, with the error, stage and ``during`` of the order where
    the attempts came first: the eager gradient's error when it failed (and the output is not
    one non-scalar float), marked "while transposing <primitive>" when the walk raised the same
    error at a rule (:func:`failing_walk`'s test), else in stage ``trace`` (where the attempts
    ran then); otherwise the walk's own error, marked at the rule that raised it."""
    error = attempted.eager_error
    if error is not None and not _non_scalar_output(rule):
        if walk.failed is not None and _same_error(walk.error, error):
            raise mark_during(error, _transposing(walk.failed.eqn.primitive.name))
        with ctx.stage("trace"):
            raise error
    if walk.failed is None:
        raise walk.error
    raise mark_during(walk.error, _transposing(walk.failed.eqn.primitive.name))


def _same_error(a: Exception, b: Exception) -> bool:
    """Same class and message (as ``run_failed`` reads them)."""
    return type(a) is type(b) and exception_text(a) == exception_text(b)


def _walk_streamed(ctx: ProbeContext, lin: Linearized, seed: list[Any]) -> WalkResult:
    """The walk after the attempts, each step's events sent as it is made; a rule that raises
    ends the run with its step last and ``during`` "while transposing <primitive>"."""
    walked = _walk_live(ctx, lin, seed)
    if isinstance(walked, _WalkFailed):
        if walked.failed is None:
            raise walked.error
        raise mark_during(walked.error, _transposing(walked.failed.eqn.primitive.name))
    return walked


def blame_custom_rules(checked: GradientChecked, linear_jaxpr: Any) -> None:
    """For a ``disagree`` verdict: the user's ``custom_vjp`` backward rules that the first
    disagreeing leaf's cotangent passes through (``internals/rule_blame.py``), kept in
    ``rules_on_path`` and named in the headline with the line where each returns. The leaves are
    the linear jaxpr's inputs in order; when they do not line up, nothing is claimed."""
    if checked.verdict != "disagree":
        return
    first = next((i for i, leaf in enumerate(checked.leaves) if leaf.disagree), None)
    if first is None or len(checked.leaves) != len(linear_jaxpr.invars):
        return
    rules = custom_rules_on_path(linear_jaxpr, first)
    if not rules:
        return
    checked.rules_on_path = [CustomRuleOnPath(name=r.name, source=r.source) for r in rules]
    named = ", ".join(
        f"{r.name} (returns at line {r.source.line})" if r.source else r.name for r in rules
    )
    one = len(rules) == 1
    checked.headline += (
        f" The cotangent of {checked.leaves[first].path} passes through your custom_vjp rule"
        f"{'' if one else 's'} {named}: JAX's own rules are tested, so check what "
        f"{'it returns' if one else 'they return'} first."
    )


def ruled_plan(plan: CallPlan, rule: OutputRule) -> CallPlan:
    """``plan`` with ``fun`` wrapped by ``rule`` (``jaxscope.grad_output``): a pytree output
    whose first leaf is a floating scalar (a train step's loss) is cut to that leaf, so every
    gradient taken here (the attempts, the walk, the references, the finite differences) is
    ``jax.grad`` of ``lambda *a: jax.tree.leaves(f(*a))[0]``."""
    return dataclasses.replace(plan, fun=rule.wrap(plan.fun))


def output_leaf_view(rule: OutputRule, subject: str = "f") -> OutputLeafView | None:
    """The note of :class:`LinearJaxprStaged` when the first-leaf rule applied, else ``None``."""
    if not rule.applied or rule.seen is None:
        return None
    return OutputLeafView(**rule.seen.view_fields(subject))


def _emit_all(ctx: ProbeContext, events: Sequence[Any]) -> None:
    for event in events:
        ctx.emit(event)


def _transposing(primitive: str) -> str:
    """``run_failed.during`` of a backward pass that raised at ``primitive``'s eqn."""
    return f"while transposing {primitive} (the backward pass of jax.grad)"


class _WalkEvents:
    """The events of a walk's steps (each step's ``TransposeStepped``, then its
    ``TransposeCallOpened`` for a call step), at most :data:`MAX_STEP_EVENTS` steps and
    :data:`MAX_OPENED_CALLS` opened calls; ``failed`` the step whose rule raised."""

    def __init__(self, lin: Linearized) -> None:
        self.lin = lin
        self.opened = 0
        self.failed: TransposeStepRecord | None = None

    def step(self, record: TransposeStepRecord) -> list[Any]:
        if record.step >= MAX_STEP_EVENTS:
            return []
        out: list[Any] = [stepped(record)]
        call = opened_call(self.lin, record) if self.opened < MAX_OPENED_CALLS else None
        if call is not None:
            self.opened += 1
            out.append(call)
        return out

    def fail(self, record: TransposeStepRecord) -> None:
        self.failed = record


def failing_walk(
    fun: Callable[..., Any], diff_args: tuple[Any, ...], grad_error: Exception
) -> tuple[LinearJaxprStaged, list[Any], str] | None:
    """When ``jax.grad`` raised ``grad_error`` in its backward pass: the linear jaxpr (linearize
    works), the events of the walk's steps up to the eqn whose transpose rule raised, that step
    last (its ``TransposeStepped`` with the error), and the primitive. ``None`` when jax.grad
    failed elsewhere: linearize or the seed raise, the walk completes, or it raises an error of
    another class or message than ``grad_error``."""
    try:
        lin = linearize_vjp(fun, diff_args)
        seed = grad_seed(lin)[0]
    except Exception:
        return None
    staged = linear_staged(lin)
    emitted = _WalkEvents(lin)
    events: list[Any] = []
    try:
        walk_transpose(lin, seed, lambda r: events.extend(emitted.step(r)), emitted.fail)
    except Exception as exc:
        failed = emitted.failed
        if failed is None or not _same_error(exc, grad_error):
            return None
        return staged, [*events, stepped(failed)], failed.eqn.primitive.name
    return None


def opened_call(lin: Linearized, record: TransposeStepRecord) -> TransposeCallOpened | None:
    """For a ``jit``/``cond``/``scan`` step: the walk its transpose rule runs inside (the body
    with the step's cotangents; a scan's first :data:`MAX_INNER_ITERATIONS` iterations in walk
    order); ``None`` for other steps."""
    eqn = record.eqn
    body = inside(lin, record)
    if body is not None:
        walks = [_walk_view(None, walk_transpose(body, record.cts_in))]
        more = 0
    else:
        shown: list[InnerWalkView] = []

        def on_iteration(i: int, result: WalkResult) -> bool:
            shown.append(_walk_view(i, result))
            return len(shown) >= MAX_INNER_ITERATIONS

        if walk_scan_body(lin, record, on_iteration=on_iteration) is None:
            return None
        walks, more = shown, int(eqn.params["length"]) - len(shown)
    return TransposeCallOpened(
        step=record.step,
        primitive=eqn.primitive.name,
        name=call_name(record),
        walks=walks,
        more_iterations=more,
        max_steps=MAX_INNER_STEPS,
        max_iterations=MAX_INNER_ITERATIONS,
    )


def _walk_view(iteration: int | None, result: WalkResult) -> InnerWalkView:
    steps = []
    for r in result.steps[:MAX_INNER_STEPS]:
        e = stepped(r)
        steps.append(
            InnerStepView(
                step=e.step,
                primitive=e.primitive,
                primal_primitive=e.primal_primitive,
                source=e.source,
                eqn_text=e.eqn_text,
                writes=e.writes,
            )
        )
    return InnerWalkView(
        iteration=iteration, steps=steps, truncated=max(0, len(result.steps) - MAX_INNER_STEPS)
    )


def choose_argnums(plan: CallPlan, args: tuple[Any, ...], chosen: Any) -> tuple[int, ...]:
    """The positions to differentiate: ``chosen`` (the snippet's ``argnums``) checked and
    normalised as ``jax.grad`` does, else every non-static positional argument whose leaves are
    all floating (``jaxscope.grad_argnums.choose_argnums``; ``InvalidSnippet`` when none is)."""
    return grad_argnums(args, plan.normalized_argnums(), chosen)


def dynamic_fun(
    plan: CallPlan, args: tuple[Any, ...], argnums: Sequence[int]
) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``(fun, diff_args)``: ``fun(*diff_args)`` is ``f(*args, **kwargs)`` with the arguments at
    ``argnums`` taken from its parameters and the others closed over (as ``jax.grad``'s
    ``argnums`` does)."""

    def fun(*diff: Any) -> Any:
        full = list(args)
        for i, d in zip(argnums, diff, strict=True):
            full[i] = d
        return plan.fun(*full, **plan.kwargs)

    return fun, tuple(args[i] for i in argnums)


def _grad_fun(plan: CallPlan, argnums: Sequence[int]) -> Callable[..., Any]:
    return jax.grad(plan.fun, argnums=tuple(argnums))


def _jit_grad(plan: CallPlan, args: tuple[Any, ...], argnums: Sequence[int]) -> Any:
    jitted = jax.jit(_grad_fun(plan, argnums), static_argnums=plan.static_argnums)
    return jitted.trace(*args, **plan.kwargs)


def _grad(plan: CallPlan, args: tuple[Any, ...], argnums: Sequence[int]) -> Any:
    # Under noting_caches: the inner jaxprs jax.grad linearises are noted in JAX's caches, so
    # that linearize_vjp reuses them (no second trace and compile of each jnp helper).
    with noting_caches():
        return block_until_ready(_grad_fun(plan, argnums)(*args, **plan.kwargs))


def _attempt(
    ctx: ProbeContext, mode: str, thunk: Callable[[], Any], rule: OutputRule | None = None
) -> Exception | None:
    """Run ``thunk``; emit :class:`GradAttempted`; return the exception it raised (or None).
    JAX's scalar-output error is cut to the output's structure (``rule.shorten``): it prints
    the whole output value, 15-20 KB for a train step."""
    try:
        thunk()
    except Exception as exc:  # shown as the exhibit's point, re-raised by run() when fatal
        if rule is not None:
            rule.shorten(exc)
        # As run_failed describes it: class, message (cut; an exception whose __str__ raises
        # still gives its class and raising line), the user's line.
        failed = describe_failure(exc, None)
        help_ = ad_help(exc)
        ctx.emit(
            GradAttempted(
                mode=mode,  # type: ignore[arg-type]
                ok=False,
                error_class=failed.error_class,
                message=failed.message,
                source=failed.source,
                explanation=help_.explanation if help_ else None,
                fix=help_.fix if help_ else None,
            )
        )
        return exc
    ctx.emit(GradAttempted(mode=mode, ok=True))  # type: ignore[arg-type]
    return None


def _non_scalar_output(rule: OutputRule) -> bool:
    """True when ``f``'s output is one floating array that is not a scalar: the walk goes on
    from an all-ones cotangent (``grad_seed``). This and the first-leaf rule (a pytree output
    whose first leaf is a floating scalar: ``rule`` cut it to that leaf, and jax.grad worked)
    are the two outputs ``jax.grad`` refuses that the exhibit walks anyway; ``rule.seen`` is the
    output the attempts' traces saw (``None`` when ``f`` raised before returning)."""
    return rule.seen is not None and rule.seen.one_nonscalar_float


# The gradient check sends each leaf's values (the walk's, jax.grad's, jax.vjp's, the finite
# differences) only for leaves of at most MAX_LEAF_VALUES elements, and at most MAX_SENT_VALUES
# elements in all (leaves in argnums then jax.tree.leaves order): a 12-layer transformer's
# gradient is 9.6 M floats, gigabytes as JSON. A leaf not sent is summarised (GradientLeaf:
# size, max |g|, its own bit-identity with jax.grad and jax.vjp, its finite-difference samples).
MAX_LEAF_VALUES = 4096
MAX_SENT_VALUES = 16_384
# At most this many finite-difference samples are listed per leaf not sent.
MAX_FD_SAMPLES = 64


def sent_leaves(args: tuple[Any, ...], argnums: Sequence[int]) -> list[list[bool]]:
    """For each differentiated argument, for each of its leaves: are its values sent (see
    :data:`MAX_LEAF_VALUES`)?"""
    total = 0
    out: list[list[bool]] = []
    for i in argnums:
        flags = []
        for leaf in jax.tree.leaves(args[i]):
            size = int(np.size(leaf))
            ok = size <= MAX_LEAF_VALUES and total + size <= MAX_SENT_VALUES
            total += size if ok else 0
            flags.append(ok)
        out.append(flags)
    return out


# The base64 the values of a run's summarised leaves may take in all: the supervisor ends a run
# past 64 MiB of events (MAX_RUN_BYTES), and the rest of a large program's stream (its steps,
# its linear jaxpr) needs room. A 12-layer transformer's 9.6 M float32 values take 49 MiB;
# the leaves past this stay summaries (null in --print gradient).
MAX_VALUES_BYTES = 50 * 2**20


def values_sent(checked: GradientChecked, gradient: Sequence[Any]) -> list[GradientValuesSent]:
    """The values of every leaf ``checked`` summarised (``sent`` false), as
    :class:`GradientValuesSent` events of at most ``VALUES_PER_EVENT`` elements each: the
    walk's ``gradient`` (one entry per differentiated argument), its leaves in the order of
    ``checked.leaves``. A complex leaf is not sent (its summary stands)."""
    flat = [leaf for g in gradient for leaf in jax.tree.leaves(g)]
    if len(flat) != len(checked.leaves):
        return []
    out: list[GradientValuesSent] = []
    budget = MAX_VALUES_BYTES
    for index, (view, value) in enumerate(zip(checked.leaves, flat, strict=True)):
        arr = np.asarray(value)
        if view.sent or not jnp.issubdtype(arr.dtype, np.floating):
            continue
        size = arr.size * (8 if arr.dtype == np.float64 else 4) * 4 // 3
        if size > budget:  # past the run's stream limit: this leaf stays a summary (null)
            continue
        budget -= size
        encoding: Literal["float32", "float64"] = (
            "float64" if arr.dtype == np.float64 else "float32"
        )
        data = arr.astype("<f8" if encoding == "float64" else "<f4").ravel()
        for start in range(0, data.size, VALUES_PER_EVENT):
            part = data[start : start + VALUES_PER_EVENT]
            out.append(
                GradientValuesSent(
                    leaf=index,
                    path=view.path,
                    start=start,
                    count=int(part.size),
                    encoding=encoding,
                    data=base64.b64encode(part.tobytes()).decode("ascii"),
                )
            )
    return out


def nested(tree: Any, sent: Sequence[bool] | None = None) -> Any:
    """One argument's values as JSON: ``None`` stays ``None``, an array (or Python scalar) is
    nested lists of floats, any other pytree the list of its leaves in ``jax.tree.leaves``
    order (a dict's in sorted key order), each nested lists of floats; NaN/Inf as ``"nan"``,
    ``"inf"``, ``"-inf"``. ``sent[j]`` false: leaf ``j`` is ``None`` (not sent)."""
    if tree is None:
        return None
    leaves = jax.tree.leaves(tree)
    shown = [
        nested_array(leaf) if sent is None or sent[j] else None for j, leaf in enumerate(leaves)
    ]
    if jax.tree_util.treedef_is_leaf(jax.tree.structure(tree)):
        return shown[0]
    return shown


def nested_array(x: Any) -> Any:
    """One array as nested lists of floats (a scalar as a float)."""
    arr = np.asarray(x)
    if arr.ndim == 0:
        return _number(arr.item())
    return [nested_array(v) for v in arr]


def _nested_fd(value: Any, known: Any, sampled: Any = None) -> Any:
    """One leaf of finite differences as nested lists, ``None`` where not known (a kink, or not
    sampled); a difference taken that came out NaN/Inf (``sampled``) as ``"nan"``/``"inf"``."""
    v, k = np.asarray(value), np.asarray(known)
    s = np.asarray(sampled if sampled is not None else known)
    if v.ndim == 0:
        if bool(k) or (bool(s) and not np.isfinite(float(v))):
            return _number(float(v))
        return None
    return [_nested_fd(a, b, c) for a, b, c in zip(v, k, s, strict=True)]


def fd_nested(
    value: Any, known: Any, sampled: Any = None, sent: Sequence[bool] | None = None
) -> Any:
    """One argument's finite differences as :func:`nested` writes its gradient."""
    trees = [value, known, sampled if sampled is not None else known]
    triples = list(zip(*(jax.tree.leaves(t) for t in trees), strict=True))
    shown = [
        _nested_fd(v, k, s) if sent is None or sent[j] else None
        for j, (v, k, s) in enumerate(triples)
    ]
    if jax.tree_util.treedef_is_leaf(jax.tree.structure(value)):
        return shown[0]
    return shown


def gradient_leaves(
    args: tuple[Any, ...],
    argnums: Sequence[int],
    gradient: Sequence[Any],
    jax_grad: Sequence[Any],
    jax_vjp: Sequence[Any],
    fd_values: Sequence[Any],
    fd_known: Sequence[Any],
    fd_sampled: Sequence[Any] | None = None,
    sent: Sequence[Sequence[bool]] | None = None,
) -> list[GradientLeaf]:
    """One :class:`GradientLeaf` per leaf of each differentiated argument, in ``argnums`` then
    ``jax.tree.leaves`` order, its path ``args[i]`` + ``jax.tree_util.keystr``. ``sent[k][j]``
    false: that leaf's values are not sent, only its summary (:func:`sent_leaves`)."""
    out: list[GradientLeaf] = []
    for k, i in enumerate(argnums):
        paths = jax.tree_util.tree_flatten_with_path(args[i])[0]
        sampled = fd_sampled[k] if fd_sampled is not None else fd_known[k]
        columns = [
            jax.tree.leaves(tree)
            for tree in (gradient[k], jax_grad[k], jax_vjp[k], fd_values[k], fd_known[k], sampled)
        ]
        for j, (path, leaf) in enumerate(paths):
            g, jg, jv, fv, fk, fs = (c[j] for c in columns)
            shown = sent is None or sent[k][j]
            g_arr = np.asarray(g)
            bad = ~np.isfinite(g_arr.astype(np.float64))
            finite = np.abs(g_arr[~bad].astype(np.float64))
            out.append(
                GradientLeaf(
                    arg=i,
                    path=f"args[{i}]{jax.tree_util.keystr(path)}",
                    aval=aval_view(jax.typeof(leaf)),
                    gradient=nested_array(g) if shown else None,
                    jax_grad=nested_array(jg) if shown else None,
                    jax_vjp=nested_array(jv) if shown else None,
                    finite_difference=_nested_fd(fv, fk, fs) if shown else None,
                    size=int(g_arr.size),
                    sent=shown,
                    equal_to_jax=_bit_equal(g, jg) and _bit_equal(g, jv),
                    max_abs=float(finite.max()) if finite.size else None,
                    nonfinite=int(bad.sum()),
                    fd_sampled=int(np.count_nonzero(np.asarray(fs))),
                    fd_samples=[] if shown else _fd_samples(g_arr, fv, fk, fs),
                )
            )
    return out


def _fd_samples(g: np.ndarray, value: Any, known: Any, sampled: Any) -> list[FdSample]:
    """The elements of one leaf where a finite difference was taken (the first
    :data:`MAX_FD_SAMPLES`), with the walk's gradient there."""
    v, k = np.asarray(value, np.float64), np.asarray(known, bool)
    taken = np.asarray(sampled, bool) | k
    out = []
    for index in np.argwhere(taken)[:MAX_FD_SAMPLES]:
        at = tuple(int(n) for n in index)
        fd = float(v[at])
        out.append(
            FdSample(
                index=list(at),
                gradient=_number(float(g[at])),
                finite_difference=_number(fd) if bool(k[at]) or not np.isfinite(fd) else None,
            )
        )
    return out


def _number(x: Any) -> Any:
    if isinstance(x, float) and not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    return float(x)


def _per_arg(
    n: int,
    argnums: Sequence[int],
    values: Sequence[Any],
    sent: Sequence[Sequence[bool]] | None = None,
) -> list[Any]:
    out: list[Any] = [None] * n
    for k, (i, v) in enumerate(zip(argnums, values, strict=True)):
        out[i] = nested(v, sent[k] if sent is not None else None)
    return out


def _bit_equal(a: Any, b: Any) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(la) == len(lb) and all(
        np.asarray(x).dtype == np.asarray(y).dtype
        and np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)
        for x, y in zip(la, lb, strict=True)
    )


def _to64(x: Any) -> Any:
    return np.asarray(x, np.float64) if is_float_leaf(x) else x


def check_gradient(
    plan: CallPlan,
    args: tuple[Any, ...],
    argnums: Sequence[int],
    gradient: Sequence[Any],
    seed: list[Any],
    seed_text: str,
    jax_grad: Any = None,
    program_eqns: int = 0,
    compute_dtype: Any = None,
) -> GradientChecked:
    """:class:`GradientChecked` for the walk's ``gradient`` (one entry per ``argnums``).
    ``jax_grad``: eager ``jax.grad(f, argnums)(*args)`` when the run already has it (the
    eager attempt's result), else it is computed here. ``program_eqns``: the size of the
    program (see :data:`MAX_FLOAT64_WALK_EQNS`; past it the float64 walk is skipped).
    ``compute_dtype``: the narrowest floating dtype the program computes in (the gradient is
    held at its precision when it is narrower than a leaf's; ``exhibits.transpose.fd_check``)."""
    scalar = seed_text == "1.0"
    fun, diff_args = dynamic_fun(plan, args, argnums)
    if jax_grad is None or not scalar:
        loss = fun if scalar else (lambda *a: jnp.sum(fun(*a)))
        jax_grad = jax.grad(loss, argnums=tuple(range(len(diff_args))))(*diff_args)
    out, f_vjp = jax.vjp(fun, *diff_args)
    jax_vjp = f_vjp(jax.tree.unflatten(jax.tree.structure(out), seed))
    equal = _bit_equal(gradient, jax_grad) and _bit_equal(gradient, jax_vjp)

    # The same walk in float64, against central differences in float64.
    grad64: Any = None
    float64_walk = program_eqns <= MAX_FLOAT64_WALK_EQNS
    if float64_walk:
        with jax.enable_x64(True):
            args64 = tuple(jax.tree.map(_to64, a) for a in args)
            fun64, diff64 = dynamic_fun(plan, args64, argnums)
            lin64 = linearize_vjp(fun64, diff64)
            seed64 = grad_seed(lin64)[0]
            grad64 = list(lin64.in_tree.unflatten(walk_transpose(lin64, seed64).cotangents))

    def fd_loss(*full: Any) -> Any:
        value = plan.fun(*full, **plan.kwargs)
        return value if scalar else jnp.sum(value)

    also = nonfinite_positions(argnums, gradient)
    fd = central_differences(
        fd_loss, args, list(argnums), also=also, max_elements=FD_ELEMENTS, per_leaf=FD_PER_LEAF
    )
    cmp = compare_fd(args, argnums, gradient, grad64, fd, compute_dtype)
    # f's float32 value, as fd_loss sums it, against the float64 value the differences are
    # taken around
    value = float(np.sum(np.asarray(jax.tree.leaves(out)[0], np.float64)))
    cmp = another_function(cmp, value, fd.f0)
    n = len(args)
    sampled = fd.sampled if fd.sampled is not None else fd.known
    sent = sent_leaves(args, argnums)
    fd_args = [
        fd_nested(v, k, s, sent[j])
        for j, (v, k, s) in enumerate(zip(fd.values, fd.known, sampled, strict=True))
    ]
    leaves = gradient_leaves(
        args, argnums, gradient, jax_grad, jax_vjp, fd.values, fd.known, fd.sampled, sent
    )
    for leaf, held in zip(leaves, cmp.leaves, strict=True):
        leaf.held_at, leaf.tolerance = held.held_at, held.tol
        leaf.checked, leaf.disagree = held.checked, held.disagree
    elements = sum(leaf.size for leaf in leaves)
    fd_sampled = sum(leaf.fd_sampled for leaf in leaves)
    return GradientChecked(
        argnums=list(argnums),
        seed=seed_text,
        gradient=_per_arg(n, argnums, gradient, sent),
        jax_grad=_per_arg(n, argnums, jax_grad, sent),
        jax_vjp=_per_arg(n, argnums, jax_vjp, sent),
        equal_to_jax=equal,
        finite_difference=_fd_per_arg(n, argnums, fd_args),
        max_abs_err=cmp.max_abs_err,
        max_rel_err=cmp.max_rel_err,
        leaves=leaves,
        compared=cmp.compared,
        not_compared=cmp.not_compared,
        not_compared_count=cmp.not_compared_count,
        elements=elements,
        fd_sampled=fd_sampled,
        leaves_not_sent=sum(not leaf.sent for leaf in leaves),
        max_leaf_values=MAX_LEAF_VALUES,
        float64_walk=float64_walk,
        program_eqns=program_eqns,
        verdict=cmp.verdict,
        headline=headline(cmp, elements, fd_sampled, _unsampled_leaves(leaves)),
        checked=cmp.checked,
        all_zero=cmp.all_zero,
        disagreements=cmp.disagreements,
        disagree_count=cmp.disagree_count,
        fd_dtype=fd.dtype,
    )


def _unsampled_leaves(leaves: Sequence[Any]) -> int:
    """How many non-empty leaves got no finite difference at all (more leaves than samples)."""
    return sum(1 for leaf in leaves if leaf.size > 0 and leaf.fd_sampled == 0)


def _fd_per_arg(n: int, argnums: Sequence[int], values: Sequence[Any]) -> list[Any]:
    out: list[Any] = [None] * n
    for i, v in zip(argnums, values, strict=True):
        out[i] = v
    return out


# The float64 walk (the truth the finite differences are held to, without float32 rounding) is
# run for a program of at most this many eqns: the top-level eqns of the jaxpr
# ``jax.jit(jax.grad(f))`` traces (the jit attempt's; the linear jaxpr's when that attempt
# failed). It runs ``f`` eagerly again in float64, whose kernels all compile cold (~25 ms an eqn
# here: 5.3 s of the Flax adam step's 267, 6.5 s of the 12-layer transformer's 2,715), as much
# as the rest of the check. Past it the finite differences are compared with the float32 walk
# instead, and the event says so (GradientChecked.float64_walk false).
MAX_FLOAT64_WALK_EQNS = 200

# The finite differences' sample (docs/design/0081-transpose-capture-round-3.md): every element
# of a gradient of at most FD_ELEMENTS elements (every example and every case of cases/ that the
# check is meant to catch is under 300, but FD06's 65,537); past it, FD_PER_LEAF evenly spaced
# elements of each leaf (its first and last among them: a wrong rule that touches one leaf only,
# a bias beside large weights, is never skipped) and the rest evenly over all the leaves. Each
# sample is two float64 evaluations of f: 4,096 of them (jaxscope.finite_diff.MAX_ELEMENTS) were
# ~8x make_jaxpr(grad(f)) on bench/ad_overhead.py's 976-eqn MLP, 512 are ~2.5x (of which ~1.3x
# the compile and the float64 value of f, whatever the sample).
FD_ELEMENTS = 512
FD_PER_LEAF = 4
