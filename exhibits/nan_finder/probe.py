"""The nan_finder exhibit's probe: walk the backward pass on the user's values and stop at the
first step whose cotangent becomes NaN or Inf.

Events, in order:

* stage ``trace``: :class:`LinearJaxprStaged`, the linear jaxpr and residual values that
  ``jax.vjp`` builds at ``args`` (``transpose_walk.linearize_vjp``, JAX's own
  ``ad.linearize(..., is_vjp=True)``).
* stage ``run``: one :class:`TransposeStepped` per step of the backward pass (JAX's transpose
  rules, ``transpose_walk.walk``, seeded with 1.0 as ``jax.grad``; a non-scalar output with all
  ones, as the transpose exhibit: ``transpose_walk.grad_seed``), up to and including the first
  step that writes a NaN or Inf cotangent (all steps when none does); then one
  :class:`NonfiniteFound`: that step's values in and out with their NaN/Inf elements located,
  the primal eqn's forward value (``internals.nan_walk.primal_output``), what ``jax.grad`` raises
  under ``jax_debug_nans``, ``jax.grad``'s own result, and the double-``where`` cure
  (:mod:`exhibits.nan_finder.cure`) checked by taking ``jax.grad`` of the rewritten snippet.

Differentiated arguments: the snippet's ``argnums`` (an int or a tuple of positions, negative
ones as in ``jax.grad``) when it sets one, else every positional argument that is not static and
whose leaves are all floating (ints, bools, complex and static arguments are held fixed, and get
``None`` in ``gradient``). As in the transpose exhibit (``jaxscope.grad_argnums``): a bad
``argnums``, ``argnums=()``, no floating argument or a complex one chosen fail with
``invalid_snippet`` before anything is walked (never a "no NaN" answer).
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.exhibit_api import (
    SWAPPED_OUT_STREAMS,
    CallPlan,
    CustomBwd,
    Linearized,
    NonfiniteEqn,
    OutputRule,
    ProbeContext,
    Snippet,
    TransposeStepRecord,
    ValueView,
    blame_line,
    block_until_ready,
    call_name,
    choose_argnums,
    custom_bwd,
    custom_bwd_return,
    fresh_caches,
    grad_seed,
    hidden_nonfinite,
    inside,
    is_nonfinite,
    linearize_vjp,
    load_snippet,
    plan_call,
    primal_output,
    value_view,
    walk_scan_body,
    walk_transpose,
)

from exhibits.custom_vjp.explain import BWD_STRUCTURE
from exhibits.nan_finder.cure import Cure, double_where, explanation_for
from exhibits.nan_finder.events import (
    CureView,
    EnclosingCall,
    ForwardEqnView,
    ForwardNonfiniteHidden,
    MarkedValue,
    NonfiniteFound,
)
from exhibits.transpose.events import OutputLeafView
from exhibits.transpose.walk_events import linear_staged, stepped

# Values with at most this many elements are sent in full (``MarkedValue.numbers``).
MAX_NUMBERS = 64
# At most this many NaN/Inf positions are listed per value.
MAX_POSITIONS = 64
# Gradient leaves with more elements than this are sent as None.
MAX_GRADIENT_ELEMENTS = 4096
# The file name the rewritten (cured) snippet is compiled under: not the user's.
CURED_FILENAME = "<snippet-cured>"


@dataclass(frozen=True)
class Target:
    """What is differentiated: ``fun(*diff_args)`` is ``f`` with the other arguments fixed;
    ``argnums`` the positions of ``diff_args`` in the snippet's ``args``. ``rule``: the
    first-leaf rule ``fun`` is wrapped with (``jaxscope.grad_output``, as in the transpose
    exhibit): a pytree output whose first leaf is a floating scalar (a train step's loss) is cut
    to that leaf; ``rule.seen`` what ``f`` returned."""

    fun: Callable[..., Any]
    diff_args: tuple[Any, ...]
    argnums: tuple[int, ...]
    n_args: int
    rule: OutputRule = field(default_factory=OutputRule, compare=False)


def differentiated(snippet: Snippet) -> Target:
    """The :class:`Target` of a snippet (see the module docstring)."""
    plan: CallPlan = plan_call(snippet)
    args = plan.args
    argnums = choose_argnums(args, plan.normalized_argnums(), snippet.namespace.get("argnums"))
    rule = OutputRule()

    @rule.wrap
    def fun(*diff: Any) -> Any:
        full = list(args)
        for i, value in zip(argnums, diff, strict=True):
            full[i] = value
        return plan.fun(*full, **plan.kwargs)

    return Target(fun, tuple(args[i] for i in argnums), argnums, len(args), rule)


def _number(x: float) -> float | str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def numbers(value: Any) -> Any:
    """``value`` (an array or a pytree of them) as nested lists, NaN/Inf as strings; ``None``
    for a leaf with more than :data:`MAX_GRADIENT_ELEMENTS` elements."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {str(k): numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [numbers(v) for v in value]
    arr = np.asarray(value)
    if arr.size > MAX_GRADIENT_ELEMENTS:
        return None
    if not np.issubdtype(arr.dtype, np.inexact):
        return arr.tolist()
    flat = [_number(float(x)) for x in arr.astype(np.float64).ravel()]
    return np.array(flat, dtype=object).reshape(arr.shape).tolist() if arr.ndim else flat[0]


def marked(label: str, raw: Any, view: ValueView) -> MarkedValue:
    """A :class:`MarkedValue` of ``raw`` (an array, or a symbolic zero / UndefinedPrimal)."""
    try:
        arr = np.asarray(raw)
    except Exception:
        return MarkedValue(label=label, value=view)
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.inexact):
        return MarkedValue(label=label, value=view)
    bad = np.flatnonzero(~np.isfinite(arr.ravel()))
    return MarkedValue(
        label=label,
        value=view,
        numbers=numbers(arr) if arr.size <= MAX_NUMBERS else None,
        nonfinite_at=[int(i) for i in bad[:MAX_POSITIONS]],
        nonfinite_count=int(bad.size),
    )


def writes_nonfinite(record: TransposeStepRecord) -> bool:
    """True when the step wrote a NaN or Inf cotangent into a linear variable."""
    return any(is_nonfinite(w.contribution) or is_nonfinite(w.running) for w in record.writes)


def _has_nan(x: Any) -> bool:
    try:
        arr = np.asarray(x)
    except Exception:
        return False
    return bool(np.issubdtype(arr.dtype, np.inexact) and np.isnan(arr).any())


def gradient_of(target: Target, ones: bool = False) -> list[Any]:
    """``jax.grad`` of ``target.fun`` w.r.t. every differentiated argument, one entry per
    element of the snippet's ``args`` (``None`` for the others). ``ones``: the output is not a
    scalar; ``jax.vjp`` with an all-ones cotangent instead (the gradient of ``sum(f)``, what the
    walk seeds with: ``transpose_walk.grad_seed``)."""
    if not target.argnums:
        return [None] * target.n_args
    if ones:
        value, f_vjp = jax.vjp(target.fun, *target.diff_args)
        grads = f_vjp(jax.tree.map(jnp.ones_like, value))
    else:
        grads = jax.grad(target.fun, argnums=tuple(range(len(target.argnums))))(*target.diff_args)
    out: list[Any] = [None] * target.n_args
    for i, g in zip(target.argnums, grads, strict=True):
        out[i] = g
    return out


def debug_nans_outcome(target: Target, ones: bool = False, flag: str = "nans") -> str | None:
    """What the gradient (``jax.grad``; ``jax.vjp`` with ones for a non-scalar output) raises
    under ``jax.debug_nans(True)`` (``flag="infs"``: ``jax.debug_infs(True)``):
    ``"FloatingPointError: ..."`` (JAX's class and first line), or ``None`` when it raises
    nothing. A ``FloatingPointError`` raised inside a host callback (``jax.pure_callback`` whose
    Python function computes with jax under the flag) reaches the caller wrapped by XLA as a
    ``JaxRuntimeError`` (``INTERNAL: CpuCallback error``): reported as that FloatingPointError,
    with where it was raised. Any other exception is reported by its class and first line: the
    outcome is recorded, the run goes on. JAX's own notice that it re-runs a jitted function
    de-optimized goes to stdout; it is not the user's print and is dropped here."""
    mode = jax.debug_infs(True) if flag == "infs" else jax.debug_nans(True)
    try:
        # Kept alive after the block: CPython 3.11's print() holds sys.stdout as a borrowed
        # reference, and a user thread printing meanwhile would write into a freed buffer.
        dropped = io.StringIO()
        SWAPPED_OUT_STREAMS.append(dropped)
        with mode, contextlib.redirect_stdout(dropped):
            block_until_ready(gradient_of(target, ones))
    except FloatingPointError as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    except Exception as e:
        text = str(e)
        inner = [ln for ln in text.splitlines() if ln.startswith("FloatingPointError:")]
        if inner:
            first = text.splitlines()[0].split(": Traceback")[0][:120]
            return (
                f"{inner[-1]} (raised inside a host callback; XLA re-raises it as "
                f"{type(e).__name__}: {first})"
            )
        return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"
    return None


def verify_cure(cure: Cure, argnums: tuple[int, ...], ones: bool = False) -> CureView:
    """``jax.grad`` of the rewritten snippet at the same ``args``: finite everywhere?"""
    view = CureView(
        guarded=cure.guarded,
        explanation=cure.explanation,
        start_line=cure.start_line,
        before=cure.before,
        after=cure.after,
        changed=cure.changed,
        form="two_lines" if cure.form == "two_lines" else "inline",
        source=cure.source,
    )
    try:
        snippet = load_snippet(cure.source, CURED_FILENAME)
        target = differentiated(snippet)
        if target.argnums != argnums:
            raise ValueError("the rewritten snippet differentiates other arguments")
        grads = gradient_of(target, ones)
    except Exception as e:  # the rewrite is ours: report its failure beside the finding
        view.verified = None
        view.verify_error = f"{type(e).__name__}: {e}"
        return view
    view.cured_gradient = numbers(grads)
    view.verified = not any(is_nonfinite(leaf) for leaf in jax.tree.leaves(grads))
    return view


def _guarded_primitives(names: list[str]) -> set[str]:
    """The primal primitives guarded calls bind (``/`` is ``div``, ``**`` ``pow`` or
    ``integer_pow``; ``sqrt`` and ``log`` are their own)."""
    by_name = {"/": ("div",), "**": ("pow", "integer_pow")}
    return {p for n in names for p in by_name.get(n, (n,))}


def _custom_bwd_text(bwd: CustomBwd) -> str:
    """The verdict for a NaN/Inf sent by a ``custom_vjp``'s backward rule: the user's ``bwd``
    computed it; JAX's derivative rules are not involved, so no custom_jvp advice."""
    at = f" (defined on line {bwd.line})" if bwd.line is not None else ""
    text = (
        f"The NaN/Inf was produced by your custom_vjp backward rule {bwd.name}{at}: this step is "
        f"custom_lin's transpose, which calls {bwd.name}(residuals, cotangent) and sends back "
        "what it returns. "
    )
    if bwd.first_bad is not None:
        primitive, source = bwd.first_bad
        where = f" on line {source.line}" if source is not None else ""
        text += (
            f"Run on this step's residuals and cotangent, its first operation with a NaN/Inf "
            f"output is {primitive}{where}. "
        )
    else:
        text += (
            "No single operation in it made the NaN/Inf: check the residuals its forward rule "
            "saved. "
        )
    return text + f"Fix {bwd.name} so that it returns finite cotangents at these inputs."


def _no_cure_text(
    record: TransposeStepRecord,
    forward_nonfinite: bool | None,
    output_nonfinite: bool | None = None,
) -> str:
    primal = record.primal_primitive or record.eqn.primitive.name
    where = (
        f"No jnp.where branch holds the {primal} on this line, so this is not the "
        "discarded-branch NaN that the double-where pattern cures. "
    )
    if forward_nonfinite and output_nonfinite is False:
        return where + (
            f"The forward value of {primal} is already NaN/Inf here, but f's output is finite: "
            "a later operation discarded it (not a jnp.where branch this finder can rewrite). "
            f"{primal}'s derivative at that input still enters the backward pass, where a zero "
            "cotangent times Inf is NaN. Keep the input off the bad point before the call (a "
            "jnp.where on the argument, as in the double-where pattern)."
        )
    if forward_nonfinite:
        return where + (
            f"The forward value of {primal} is already NaN/Inf here: the function itself is not "
            "finite at these inputs, so neither is its derivative. Check the inputs (or guard "
            "them before the call)."
        )
    if forward_nonfinite is None:  # e.g. a helper called twice: the forward value is not shown
        return where + (
            f"If {primal}'s forward value is finite here, its derivative is not at these inputs "
            "(e.g. sqrt at 0, whose slope is infinite): choose one with jax.custom_jvp, or keep "
            "the input off the singular point (sqrt(x + eps), or a double where around it). If "
            "the forward value is already NaN/Inf, check the inputs."
        )
    return where + (
        f"The forward value is finite, but {primal}'s derivative is not at these inputs (e.g. "
        "sqrt at 0, whose slope is infinite). If the function should have a derivative here, "
        "choose one with jax.custom_jvp, or keep the input off the singular point (sqrt(x + "
        "eps), or a double where around it)."
    )


def run(ctx: ProbeContext) -> None:
    """Run the nan_finder exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    target = differentiated(ctx.snippet)
    with ctx.stage("trace"):
        # The walk's primal_primitive attribution is only right on a fresh trace: with JAX's
        # tracing caches warm (a second run in the same worker) the tangent eqns of a cached
        # jnp helper are attributed to ``jit``. Empty them first (see the design note).
        fresh_caches()
        lin = linearize_vjp(target.fun, target.diff_args)
        try:
            cts, seed = grad_seed(lin)
        except TypeError as exc:  # JAX's scalar-output error: cut its printout of the output
            target.rule.shorten(exc)
            raise
        ones = seed != "1.0"
        staged = linear_staged(lin)
        if target.rule.applied and target.rule.seen is not None:
            staged.output_leaf = OutputLeafView(**target.rule.seen.view_fields())
        ctx.emit(staged)

    with ctx.stage("run"):
        hit: list[TransposeStepRecord] = []

        def on_step(record: TransposeStepRecord) -> bool:
            ctx.emit(stepped(record))
            if writes_nonfinite(record):
                hit.append(record)
                return True
            return False

        failed: list[TransposeStepRecord] = []
        try:
            result = walk_transpose(lin, cts, on_step, on_error=failed.append)
        except TypeError as e:
            at = custom_bwd_return(failed[0].eqn) if failed else None
            if at is None or not str(e).startswith(BWD_STRUCTURE):  # the custom_vjp lab's match
                raise
            # JAX checks bwd's output after bwd returned: its traceback ends at the call in f.
            # Point at bwd's return, as the custom_vjp exhibit does.
            raise blame_line(
                TypeError(str(e)),
                at.line,
                at.function or "<module>",
                "Your custom_vjp backward rule returned a different structure than the "
                "primal function's arguments: one cotangent per argument, in a tuple.",
            ) from None
        gradient = numbers(gradient_of(target, ones))
        hidden = _hidden_forward(target)
        if hidden is not None:
            ctx.emit(hidden)
        if not hit:
            ctx.emit(
                NonfiniteFound(
                    found=False, gradient=gradient, steps_walked=len(result.steps), seed=seed
                )
            )
            return
        calls, innermost, stopped = descend(lin, hit[0])
        output_bad = any(is_nonfinite(o) for o in lin.out_primals)
        found = finding(
            ctx, target, innermost, gradient, len(result.steps), calls, ones, output_bad
        )
        found.seed = seed
        found.inputs_nonfinite = nonfinite_inputs(target)
        found.not_descended = stopped or not_descended(innermost)
        found.output_nonfinite = output_bad
        if calls:
            found.inside = calls
            found.inner_step = innermost.step
            found.step = hit[0].step
            _blame_the_call(found, calls)
        ctx.emit(found)


def _hidden_forward(target: Any) -> ForwardNonfiniteHidden | None:
    """The NaN/Inf that ``f``'s forward pass makes and its outputs hide
    (``internals.hidden_nonfinite``), on the differentiated function and arguments."""
    closed = jax.make_jaxpr(target.fun)(*target.diff_args)
    found = hidden_nonfinite(closed, jax.tree.leaves(target.diff_args))
    if found is None:
        return None

    def view(e: NonfiniteEqn) -> ForwardEqnView:
        return ForwardEqnView(
            index=e.index,
            primitive=e.primitive,
            source=e.source,
            text=e.text,
            kind="nan" if e.kind == "nan" else "inf",
        )

    return ForwardNonfiniteHidden(
        origin=view(found.origin),
        hider=view(found.hider) if found.hider is not None else None,
        count=found.count,
    )


def _blame_the_call(found: NonfiniteFound, calls: list[EnclosingCall]) -> None:
    """A bad step with no line of the user's (inside a library function: ``jnp.corrcoef``,
    ``jnp.linalg.norm``, ``logsumexp`` are jitted calls whose bodies JAX traced from its own
    source) is blamed on the innermost call that has one: the line where the user called the
    library, which is the line they can change; ``library_call`` names the call."""
    if found.source is not None:
        return
    for call in reversed(calls):
        if call.source is not None:
            found.source = call.source
            found.library_call = call.name or call.primitive
            return


# How many nested bodies the finder descends into (a recursive helper cannot nest deeper than
# its trace did, but keep the walk bounded).
MAX_DEPTH = 16
# A scan is walked iteration by iteration only up to this many body eqns in all (iterations x
# body eqns: about 2 s here); a longer one is reported at its call, as before.
MAX_SCAN_EQN_STEPS = 50_000


def descend(
    lin: Linearized, record: TransposeStepRecord
) -> tuple[list[EnclosingCall], TransposeStepRecord, str | None]:
    """From a first bad step that is a ``jit``, ``cond``, ``remat2`` or ``scan`` call, walk that
    call's body down to
    its first bad step, again while that is such a call too: for ``jit`` the backward pass of its
    body with the cotangents the step received (what JAX's ``jit`` transpose runs, and re-runs
    de-optimised under ``jax_debug_nans``), for ``scan`` the body's backward pass one iteration
    at a time, as ``scan``'s transpose runs it. Returns the calls descended into (outermost
    first), the innermost bad step, and why the descent stopped at a call it walks into (the
    walk of that call's body failed in jaxscope's machinery, which ``jax.grad`` does not use:
    the finding is then the call itself, and the exception is not the user's)."""
    calls: list[EnclosingCall] = []
    stopped: str | None = None
    while len(calls) < MAX_DEPTH:
        hit: list[TransposeStepRecord] = []

        def on_step(inner: TransposeStepRecord, hit: list[TransposeStepRecord] = hit) -> bool:
            if writes_nonfinite(inner):
                hit.append(inner)
                return True
            return False

        iteration: int | None = None
        reverse, forward_bad = False, None
        try:
            body = inside(lin, record)
            if body is not None:
                walk_transpose(body, record.cts_in, on_step)
            elif _scan_size(record) > MAX_SCAN_EQN_STEPS:
                break
            else:
                scanned = walk_scan_body(lin, record, on_step)
                if scanned is None or scanned.body is None:
                    break
                body, iteration = scanned.body, scanned.iteration
                reverse, forward_bad = scanned.reverse, scanned.first_nonfinite_residual
        except Exception as e:  # JAX's own transpose of the call ran; ours of its body did not
            stopped = (
                f"The finder could not walk inside this {record.eqn.primitive.name} call "
                f"({type(e).__name__} in jaxscope's walk of its body; JAX's own backward pass "
                "ran it, this step's values are JAX's): the NaN/Inf is reported at the call."
            )
            break
        if not hit:  # eagerly the body stays finite: the call's own result is what we report
            break
        calls.append(
            EnclosingCall(
                step=record.step,
                primitive=record.eqn.primitive.name,
                name=call_name(record),
                source=record.view.source,
                iteration=iteration,
                reverse=reverse,
                forward_nonfinite_iteration=forward_bad,
            )
        )
        lin, record = body, hit[0]
    return calls, record, stopped


def nonfinite_inputs(target: Target) -> list[str]:
    """``args[i]<keypath>: N of M elements NaN/Inf`` for each differentiated leaf holding any."""
    out = []
    for i, arg in zip(target.argnums, target.diff_args, strict=True):
        for path, leaf in jax.tree_util.tree_flatten_with_path(arg)[0]:
            try:
                arr = np.asarray(leaf)
            except TypeError:  # e.g. a PRNG key: not a number
                continue
            if not np.issubdtype(arr.dtype, np.inexact):
                continue
            bad = int(np.count_nonzero(~np.isfinite(arr)))
            if bad:
                where = f"args[{i}]{jax.tree_util.keystr(path)}"
                out.append(f"{where}: {bad} of {arr.size} elements NaN/Inf")
    return out


def not_descended(record: TransposeStepRecord) -> str | None:
    """Why the finder stopped at a ``scan`` step without walking inside it (too long)."""
    size = _scan_size(record)
    if size <= MAX_SCAN_EQN_STEPS:
        return None
    length = int(record.eqn.params["length"])
    eqns = len(record.eqn.params["jaxpr"].jaxpr.eqns)
    return (
        f"This scan runs {length:,} iterations of a {eqns}-eqn body: more than "
        f"{MAX_SCAN_EQN_STEPS:,} body-eqn steps, so the finder did not walk inside it. The bad "
        "cotangent is born somewhere in its body: try a shorter xs to find where."
    )


def _scan_size(record: TransposeStepRecord) -> int:
    """Iterations x body eqns of a ``scan`` step (0 for other eqns)."""
    if record.eqn.primitive.name != "scan":
        return 0
    body = record.eqn.params["jaxpr"].jaxpr
    return int(record.eqn.params["length"]) * len(body.eqns)


def finding(
    ctx: ProbeContext,
    target: Target,
    record: TransposeStepRecord,
    gradient: Any,
    steps: int,
    calls: Sequence[EnclosingCall] = (),
    ones: bool = False,
    output_nonfinite: bool | None = None,
) -> NonfiniteFound:
    """The :class:`NonfiniteFound` event for the step ``record``, found inside ``calls``
    (outermost first; a ``scan``'s ``iteration`` picks the forward value's iteration)."""
    shown = record.view  # the step as the stepper shows it
    values_in = [
        marked(f"cotangent arriving at {view.var}", raw, view)
        for raw, view in zip(record.cts_in, shown.cts_in, strict=True)
    ]
    values_in += [
        marked(f"residual {view.var}", raw, view)
        for raw, view in zip(record.args, shown.args, strict=True)
        if view.role == "residual"
    ]
    values_out: list[MarkedValue] = []
    for raw, view in zip(record.writes, shown.writes, strict=True):
        values_out.append(
            marked(f"cotangent sent to {view.var}", raw.contribution, view.contribution)
        )
        if view.mode == "accumulate":
            values_out.append(marked(f"running sum of {view.var}", raw.running, view.running))
    kind: Literal["nan", "inf"] = (
        "nan"
        if any(_has_nan(w.contribution) or _has_nan(w.running) for w in record.writes)
        else "inf"
    )

    forward_value: MarkedValue | None = None
    forward_nonfinite: bool | None = None
    bwd = custom_bwd(record.eqn, record.args, record.cts_in)
    # A custom_vjp's backward rule made it: the value of custom_vjp_call (the primal output)
    # is not what the rule's NaN/Inf comes from, so it is not looked up or shown.
    if bwd is None and record.primal_primitive and shown.source is not None:
        iterations = [c.iteration for c in calls if c.primitive == "scan"]
        out = (
            primal_output(
                target.fun,
                target.diff_args,
                record.primal_primitive,
                shown.source,
                [i for i in iterations if i is not None],
            )
            if None not in iterations
            else None
        )
        if out is not None:
            forward_value = marked(
                f"forward value of {record.primal_primitive}", out, value_view(out, "primal")
            )
            forward_nonfinite = is_nonfinite(out)

    cure_view: CureView | None = None
    no_cure: str | None = None
    if shown.source is not None:
        cure = double_where(ctx.snippet.source, shown.source.line, shown.source.column)
        if cure is not None:
            cure_view = verify_cure(cure, target.argnums, ones)
            primal = record.primal_primitive
            if primal and primal not in _guarded_primitives(cure.guarded):
                cure_view.explanation = explanation_for(cure.guarded, primal)
    if cure_view is None:
        no_cure = (
            _custom_bwd_text(bwd)
            if bwd is not None
            else _no_cure_text(record, forward_nonfinite, output_nonfinite)
        )
    bad_line = bwd.first_bad if bwd is not None else None

    return NonfiniteFound(
        found=True,
        kind=kind,
        step=record.step,
        eqn_index=record.eqn_index,
        eqn_text=shown.eqn_text,
        primitive=shown.primitive,
        primal_primitive=record.primal_primitive,
        source=shown.source,
        values_in=values_in,
        values_out=values_out,
        forward_value=forward_value,
        forward_nonfinite=forward_nonfinite,
        debug_nans=debug_nans_outcome(target, ones),
        debug_infs=debug_nans_outcome(target, ones, "infs") if kind == "inf" else None,
        bwd_name=bwd.name if bwd is not None else None,
        bwd_primitive=bad_line[0] if bad_line is not None else None,
        bwd_source=bad_line[1] if bad_line is not None else None,
        gradient=gradient,
        steps_walked=steps,
        cure=cure_view,
        no_cure=no_cure,
    )
