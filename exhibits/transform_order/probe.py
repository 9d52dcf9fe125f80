"""The transform_order exhibit's probe: a stack of JAX transforms (chips, outermost first)
applied to the user's ``f``, then the built-in comparisons.

Events, in order (each a :class:`TransformStackEvaluated`):

1. stage ``run``: the user's stack (``RunOptions.stack``, else the snippet's ``stack``, else
   ``["vmap", "grad"]``) composed with JAX's own transforms and called on the snippet's ``args``:
   the value, ``jax.make_jaxpr`` of the composed function, the tracers that reached ``f``
   (``jaxscope.internals.trace_stack``), or JAX's error (class, text, user line, explanation).
2. stage ``run``: the built-in comparisons (fixed functions, independent of the snippet):
   ``per_example`` (``vmap(grad(u))`` vs ``grad(vmap(u))`` vs ``grad(sum ∘ vmap(u))``),
   ``jacobian`` (``jacfwd`` vs ``jacrev`` on a tall and a wide Jacobian: values, eqn counts,
   ``cost_analysis`` flops, warm times) and ``model`` (per-example gradients of a linear model
   with ``in_axes=(None, 0, 0)``, the default ``in_axes``, and the summed gradient), each result
   checked against a numpy closed form.

How each chip applies (``docs/design/0012-transform-order.md``): ``jit`` is ``jax.jit``;
``grad``/``value_and_grad``/``jacfwd``/``jacrev``/``hessian`` differentiate with respect to the
first argument (JAX's default ``argnums=0``); ``vmap`` is ``jax.vmap(g, in_axes)`` with the
snippet's ``in_axes`` (``RunOptions.in_axes`` overrides; default 0) for every vmap chip; ``jvp``
is ``lambda *a: jax.jvp(g0, (a[0],), (ones_like(a[0]),))`` and returns ``(primal_out,
tangent_out)``; ``vjp`` is ``out, pb = jax.vjp(g0, a[0])`` returning ``(out,
pb(ones_like(out))[0])`` — where ``g0`` is ``g`` with the other arguments held fixed, and an
integer/bool/key leaf gets the ``float0`` zero instead of ones (its only valid tangent).

``grad`` and ``value_and_grad`` need a scalar output. When the function a ``grad`` or
``value_and_grad`` chip wraps returns a pytree whose first leaf (``jax.tree.leaves`` order) is a
floating scalar, e.g. a train step's ``(loss, new_params, opt_state)``, the chip differentiates
that leaf: ``grad(g)`` is ``jax.grad(lambda *a: jax.tree.leaves(g(*a))[0])``, and
``value_and_grad``'s value is that leaf too (``jaxscope.grad_output``, the rule the transpose
and nan_finder exhibits apply to ``f``). The event says so (``output_leaf``). The rule is
decided on the output the chip's function returns inside the stack, so ``vmap(grad(step))``
looks at one example's output and ``grad(vmap(step))`` at the batched one (whose loss is then
not a scalar: JAX's error, as without the rule). Otherwise JAX's own error is shown, with its
printout of the output cut to the output's structure.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, get_args

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.exhibit_api import (
    ArgTrace,
    CallPlan,
    InvalidSnippet,
    OutputRule,
    ProbeContext,
    RunOptions,
    blame_line,
    block_until_ready,
    count_eqns,
    describe_failure,
    eval_option,
    exception_text,
    is_memory_error,
    jaxpr_view,
    observing_trace_stack,
    options_as,
    output_previews,
    plan_call,
    setting_line,
    shorten_scalar_error,
    user_frames,
)

from exhibits.transform_order.events import ArgTraceView, TransformStackEvaluated
from exhibits.transform_order.options import TransformName
from exhibits.transpose.events import OutputLeafView
from exhibits.vmap.options import VmapOptions
from exhibits.whole_values import values_sent

from .options import TransformOrderOptions

CHIPS: tuple[str, ...] = get_args(TransformName)
DEFAULT_STACK: tuple[str, ...] = ("vmap", "grad")
TIME_REPEATS = 5

# ---- composing the chips -------------------------------------------------------------------


def trace_views(args: Sequence[ArgTrace]) -> list[ArgTraceView]:
    """The event's views of the tracer nests ``observing_trace_stack`` recorded (records of the
    internals walker, made views here: design 0059)."""
    return [ArgTraceView.model_validate(a, from_attributes=True) for a in args]


def _unit_tangent(x: Any) -> Any:
    """Ones for a floating/complex leaf; for an integer, bool or key leaf the ``float0`` zero of
    its shape, the only tangent (and cotangent) ``jax.jvp``/``jax.vjp`` accept for it."""
    dtype = jax.dtypes.result_type(x)
    if jnp.issubdtype(dtype, np.inexact):
        return jnp.ones_like(x)
    return np.zeros(np.shape(x), jax.dtypes.float0)


def _ones(tree: Any) -> Any:
    return jax.tree.map(_unit_tangent, tree)


def _jvp_first(g: Callable[..., Any]) -> Callable[..., Any]:
    """The ``jvp`` chip: JVP w.r.t. the first argument with a tangent of ones."""

    def jvp_first(*a: Any) -> Any:
        def g0(a0: Any) -> Any:
            return g(a0, *a[1:])

        return jax.jvp(g0, (a[0],), (_ones(a[0]),))

    return jvp_first


def _vjp_first(g: Callable[..., Any]) -> Callable[..., Any]:
    """The ``vjp`` chip: VJP w.r.t. the first argument, pulled back from a cotangent of ones."""

    def vjp_first(*a: Any) -> Any:
        def g0(a0: Any) -> Any:
            return g(a0, *a[1:])

        out, pullback = jax.vjp(g0, a[0])
        return out, pullback(_ones(out))[0]

    return vjp_first


# The chips that need a scalar output (``jax.grad``'s check): the first-leaf rule applies to them.
SCALAR_CHIPS = ("grad", "value_and_grad")


def apply_chip(
    name: str, g: Callable[..., Any], in_axes: Any, rule: OutputRule | None = None
) -> Callable[..., Any]:
    """One chip wrapped around ``g`` (see the module docstring); ``rule``: for ``grad`` and
    ``value_and_grad``, the first-leaf rule ``g`` is wrapped with first."""
    if name in SCALAR_CHIPS and rule is not None:
        g = rule.wrap(g)
    if name == "jit":
        return jax.jit(g)
    if name == "grad":
        return jax.grad(g)
    if name == "value_and_grad":
        return jax.value_and_grad(g)
    if name == "vmap":
        return jax.vmap(g, in_axes=in_axes)
    if name == "jacfwd":
        return jax.jacfwd(g)
    if name == "jacrev":
        return jax.jacrev(g)
    if name == "hessian":
        return jax.hessian(g)
    if name == "jvp":
        return _jvp_first(g)
    if name == "vjp":
        return _vjp_first(g)
    raise InvalidSnippet(f"unknown transform {name!r}; the chips are {', '.join(CHIPS)}")


def compose(
    f: Callable[..., Any],
    stack: Sequence[str],
    in_axes: Any,
    rules: dict[int, OutputRule] | None = None,
) -> Callable[..., Any]:
    """``stack[0](stack[1](...(f)))``: the first name is the outermost transform. ``rules``:
    filled with the first-leaf rule of each ``grad``/``value_and_grad`` chip, by stack position
    (``jaxscope.grad_output``: the function the chip wraps returning a pytree whose first leaf
    is a floating scalar is differentiated at that leaf)."""
    g = f
    for i in reversed(range(len(stack))):
        rule = None
        if rules is not None and stack[i] in SCALAR_CHIPS:
            rule = rules[i] = OutputRule()
        g = apply_chip(stack[i], g, in_axes, rule)
    return g


def output_leaves(stack: Sequence[str], rules: dict[int, OutputRule]) -> list[OutputLeafView]:
    """One :class:`OutputLeafView` per chip whose first-leaf rule applied, outermost first; the
    note names the function the chip wraps (``f``, or ``vmap(f)`` for ``grad(vmap(f))``)."""
    out = []
    for i in sorted(rules):
        rule = rules[i]
        if rule.applied and rule.seen is not None:
            subject = stack_code(stack[i + 1 :], "f", None)
            out.append(OutputLeafView(**rule.seen.view_fields(subject), chip=i))
    return out


def _shorten(exc: Exception, rules: dict[int, OutputRule]) -> None:
    """Cut JAX's scalar-output error (it prints the whole output) to the output's structure,
    as seen by the innermost grad chip that saw an output it could not differentiate."""
    refused = [r for _, r in sorted(rules.items()) if r.seen is not None and not r.applied]
    shorten_scalar_error(exc, refused[-1].seen if refused else None)


def stack_code(stack: Sequence[str], fname: str, in_axes_text: str | None) -> str:
    """The Python expression of a stack, e.g. ``vmap(grad(f), in_axes=(None, 0, 0))``."""
    expr = fname
    for name in reversed(stack):
        if name == "vmap" and in_axes_text not in (None, "0"):
            expr = f"vmap({expr}, in_axes={in_axes_text})"
        else:
            expr = f"{name}({expr})"
    return expr


# ---- evaluating one stack ------------------------------------------------------------------

_EXTRA_HELP: tuple[tuple[str, str, str], ...] = (
    (
        "vmap got inconsistent sizes",
        "Every argument that vmap maps must have the same size along its mapped axis. With the"
        " default in_axes=0 every argument is mapped, the parameters included, so vmap tries to"
        " split the parameters into examples too.",
        "Say which arguments are not mapped with None: vmap(g, in_axes=(None, 0, 0)).",
    ),
    (
        "vmap in_axes must be",
        "in_axes gives one entry per positional argument of the function vmap wraps (or one int"
        " for all of them); this one does not match the arguments.",
        "Give one entry per argument: an int (the mapped axis) or None (not mapped).",
    ),
)


def _explain(
    exc: Exception, stack: Sequence[str], general: tuple[str | None, str | None]
) -> tuple[str | None, str | None]:
    """(explanation, fix): the order-specific one (grad outside vmap), else the runner's
    (``general``, from ``jaxscope.sandbox.errors.describe_failure``), else this exhibit's own."""
    msg = exception_text(exc)
    grads = [i for i, n in enumerate(stack) if n in ("grad", "value_and_grad")]
    if "Gradient only defined for scalar-output" in msg and "vmap" in stack and grads:
        if stack.index("vmap") > grads[0]:
            return (
                "grad is outside vmap here, so grad differentiates the batched function: its"
                " output has one value per example, not one scalar, and grad needs a scalar."
                " Order matters: vmap(grad(f)) differentiates each example's scalar output.",
                "Put vmap outside (vmap(grad(f)): per-example gradients), or reduce the batch"
                " first: grad(lambda x: vmap(f)(x).sum()) (the summed gradient).",
            )
    if general[0] is not None:
        return general
    for marker, explanation, fix in _EXTRA_HELP:
        if marker in msg:
            return explanation, fix
    return None, None


def _flops(compiled: Any) -> float | None:
    cost = compiled.cost_analysis()
    if isinstance(cost, list):
        cost = cost[0] if cost else None
    if not isinstance(cost, dict) or "flops" not in cost:
        return None
    return float(cost["flops"])


def _timed(compiled: Any, args: tuple[Any, ...]) -> tuple[Any, float]:
    """The output of ``compiled(*args)`` and the median wall time (ms) of warm calls
    (``jax.block_until_ready`` on each)."""
    out = block_until_ready(compiled(*args))
    times = []
    for _ in range(TIME_REPEATS):
        t0 = time.perf_counter()
        block_until_ready(compiled(*args))
        times.append((time.perf_counter() - t0) * 1e3)
    return out, statistics.median(times)


def is_jitted(f: object) -> bool:
    """Whether ``f`` is a ``jax.jit``-wrapped function (``jax.stages.Wrapped``: it has
    ``lower`` and ``trace``, and the Python function it wraps as ``__wrapped__``)."""
    return all(callable(getattr(f, name, None)) for name in ("lower", "trace")) and callable(
        getattr(f, "__wrapped__", None)
    )


def evaluate(
    f: Callable[..., Any],
    args: tuple[Any, ...],
    stack: Sequence[str],
    in_axes: Any,
    *,
    label: str,
    group: str,
    code: str,
    in_axes_text: str | None = None,
    user_f: object = None,
    measure: bool = False,
    source: str = "",
) -> tuple[TransformStackEvaluated, Any]:
    """Compose ``stack`` around ``f``, call it on ``args`` (the tracers reaching ``f`` are
    recorded on that call), then ``jax.make_jaxpr`` of the same composition. JAX's error, if it
    rejects the stack, is kept with its class, text and the user's line (``source``: the
    snippet's text, whose ``args`` line is the one of vmap's inconsistent sizes, as the vmap
    exhibit says). Returns the event and the output (``None`` when JAX rejected the stack)."""
    observed, seen = observing_trace_stack(f)
    flops = time_ms = None
    rules: dict[int, OutputRule] = {}
    try:
        if measure:
            # Under jax.jit: one trace (observed), one compile (cost_analysis), warm timings.
            traced = jax.jit(compose(observed, stack, in_axes, rules)).trace(*args)
            closed = traced.jaxpr
            compiled = traced.lower().compile()
            flops = _flops(compiled)
            out, time_ms = _timed(compiled, args)
        else:
            # Eagerly, as the user would call it; the tracers reaching f are recorded here.
            out = compose(observed, stack, in_axes, rules)(*args)
            # The same rules again (the same outputs: they apply alike), on fresh wrappers.
            closed = jax.make_jaxpr(compose(f, stack, in_axes, {}))(*args)
    except Exception as exc:
        if is_memory_error(exc):
            raise
        _shorten(exc, rules)
        text = exception_text(exc)
        if source and "vmap" in stack and text.startswith("vmap got inconsistent sizes"):
            # about the arguments' sizes: their line, as the vmap exhibit says
            blame_line(exc, setting_line(source, "args"))
        # As run_failed describes it (class and message cut; an exception whose __str__ raises
        # still gives its class and raising line).
        failed = describe_failure(exc, "run", user_f)
        explanation, fix = _explain(exc, stack, (failed.explanation, failed.fix))
        failed_event = TransformStackEvaluated(
            stack=list(stack),
            label=label,
            group=group,
            code=code,
            in_axes=in_axes_text,
            ok=False,
            error_class=failed.error_class,
            message=failed.message,
            source=failed.source,
            explanation=explanation,
            fix=fix,
            traces=trace_views(seen.args),
            traces_left_out=seen.left_out,
            traces_at_jit=is_jitted(f),
            output_leaf=output_leaves(stack, rules),
        )
        return failed_event, None
    event = TransformStackEvaluated(
        stack=list(stack),
        label=label,
        group=group,
        code=code,
        in_axes=in_axes_text,
        ok=True,
        jaxpr=jaxpr_view(closed),
        result=output_previews(out),
        traces=trace_views(seen.args),
        traces_left_out=seen.left_out,
        traces_at_jit=is_jitted(f),
        eqn_count=count_eqns(closed.jaxpr),
        flops=flops,
        time_ms=time_ms,
        output_leaf=output_leaves(stack, rules),
    )
    return event, out


# ---- the user's stack ----------------------------------------------------------------------


def _dynamic_fun(plan: CallPlan) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """``f`` with static arguments and keyword arguments held fixed, and its traced args."""
    static = set(plan.normalized_argnums())
    if not static and not plan.kwargs:
        return plan.fun, plan.args
    args = plan.args

    def fun(*dyn: Any) -> Any:
        it = iter(dyn)
        full = [args[i] if i in static else next(it) for i in range(len(args))]
        return plan.fun(*full, **plan.kwargs)

    functools.update_wrapper(fun, plan.f)
    return fun, plan.dynamic_args()


def _max_stack() -> int:
    """The cap on ``RunOptions.stack`` (its ``max_length``): a snippet's ``stack`` gets the same."""
    for meta in RunOptions.model_fields["stack"].metadata:
        limit = getattr(meta, "max_length", None)
        if isinstance(limit, int):
            return limit
    raise AssertionError("RunOptions.stack has no max_length")


MAX_STACK = _max_stack()


def _stack(ctx: ProbeContext) -> list[str]:
    chosen = options_as(ctx.options, TransformOrderOptions).stack
    if chosen is not None:
        return list(chosen)
    stack = ctx.snippet.namespace.get("stack", DEFAULT_STACK)
    if isinstance(stack, str):
        stack = [s.strip() for s in stack.split(",") if s.strip()]
    if not isinstance(stack, list | tuple) or any(
        not isinstance(s, str) or s not in CHIPS for s in stack
    ):
        shown = repr(stack)
        raise InvalidSnippet(
            f"`stack` must be a list of transform names (outermost first) from {', '.join(CHIPS)};"
            f" got {shown[:200] + '...' if len(shown) > 200 else shown}"
        )
    if len(stack) > MAX_STACK:
        raise InvalidSnippet(
            f"`stack` has {len(stack)} transforms; at most {MAX_STACK} are allowed (as in the "
            "stack picker): each one multiplies the work of tracing f, so a deeper stack would "
            "run out of the run's time budget"
        )
    return list(stack)


def _in_axes(ctx: ProbeContext, plan: CallPlan) -> tuple[Any, str | None]:
    ns = ctx.snippet.namespace
    option = options_as(ctx.options, VmapOptions).in_axes
    if option is not None and option.strip():
        text: str | None = option
        # A bad expression is the option's fault (invalid_snippet naming it), not f's.
        value = eval_option(option, "in_axes", dict(ns))
    elif "in_axes" in ns:
        value = ns["in_axes"]
        text = repr(value)
    else:
        value, text = 0, None
    static = plan.normalized_argnums()
    if static and isinstance(value, tuple | list) and len(value) == len(plan.args):
        value = tuple(a for i, a in enumerate(value) if i not in static)
    return value, text


def run(ctx: ProbeContext) -> None:
    """Run the transform_order exhibit on ``ctx.snippet``."""
    plan = plan_call(ctx.snippet)
    stack = _stack(ctx)
    in_axes, in_axes_text = _in_axes(ctx, plan)
    fun, args = _dynamic_fun(plan)
    fname = plan.fun_name
    with ctx.stage("run"):
        event, out = evaluate(
            fun,
            args,
            stack,
            in_axes,
            label="your stack",
            group="user",
            code=stack_code(stack, fname, in_axes_text if "vmap" in stack else None) + "(*args)",
            in_axes_text=in_axes_text if "vmap" in stack else None,
            user_f=ctx.snippet.f,
            source=ctx.snippet.source,
        )
    if not event.ok:
        with ctx.stage("run"):
            plain_failure(fun, args, stack, in_axes)
    ctx.emit(event)
    if event.ok and not ctx.on_demand:
        # A run that prints whole artefacts (the CLI's) gets the results the previews summarise.
        for sent in values_sent(event.result, out):
            ctx.emit(sent)
    with ctx.stage("run"):
        comparisons = builtin_comparisons()
    for e in comparisons:
        ctx.emit(e)


# The chips that only change how ``f`` is called (batched, staged out), not what is computed:
# the stack without its differentiating chips is the plain transform of ``f``.
PLAIN_CHIPS = ("jit", "vmap")


def plain_failure(
    fun: Callable[..., Any], args: tuple[Any, ...], stack: Sequence[str], in_axes: Any
) -> None:
    """Raise what the plain transform of ``f`` raises inside ``f``: the user's stack kept to its
    ``jit`` and ``vmap`` chips, in their order (plain ``f(*args)`` when it has none), called
    on ``args``. Called once the user's stack failed: when the plain transform fails too, at a
    line of the snippet, the error is ``f``'s own (a shape bug, a Python branch on a traced
    value under ``jit``, a donated array used again) whatever the order of the transforms, and
    the run fails there, at the user's line, as every other exhibit's run does. When it runs,
    or fails before ``f`` ran (vmap's sizes: the stack's ``in_axes``), the failure belongs to
    the stack (``grad`` of a batched output, a tracer that only differentiation makes): the
    exhibit's lesson, shown."""
    plain = [name for name in stack if name in PLAIN_CHIPS]
    try:
        block_until_ready(compose(fun, plain, in_axes)(*args))
    except Exception as exc:
        if is_memory_error(exc) or user_frames(exc.__traceback__):
            raise
        # Raised before f ran (vmap's sizes, in_axes that do not fit): the stack's settings,
        # which the exhibit shows beside the stack.


# ---- the built-in comparisons --------------------------------------------------------------


def u(x: Any) -> Any:
    """The per-example function of the first comparison (case C06's ``u``)."""
    return x**3 + jnp.sin(x)


def loss(w: Any, x: Any, y: Any) -> Any:
    """Squared error of a linear model on one example: ``(x·w - y)²``."""
    return (jnp.dot(x, w) - y) ** 2


_RNG = np.random.default_rng(0)
XS = np.linspace(0.0, 1.0, 4, dtype=np.float32)
W = np.array([0.5, -1.0, 2.0], dtype=np.float32)
X = _RNG.normal(size=(8, 3)).astype(np.float32)
Y = _RNG.normal(size=(8,)).astype(np.float32)
TALL = (200, 4)  # outputs x inputs of the tall Jacobian
A_TALL = (_RNG.normal(size=TALL) / 2).astype(np.float32)
A_WIDE = (_RNG.normal(size=TALL[::-1]) / 10).astype(np.float32)


def tall(x: Any) -> Any:
    """R^4 -> R^200: a tall Jacobian (200 x 4)."""
    return jnp.tanh(A_TALL @ x)


def wide(x: Any) -> Any:
    """R^200 -> R^4: a wide Jacobian (4 x 200)."""
    return jnp.tanh(A_WIDE @ x)


def _close(e: TransformStackEvaluated, got: Any, want: np.ndarray, what: str) -> None:
    """Mark ``e`` with the check of its output ``got`` against the closed form ``want``."""
    if not e.ok:
        return
    e.check = what
    e.check_ok = bool(np.allclose(np.asarray(got, np.float64), want, rtol=1e-4, atol=1e-5))


def _summed_u(x: Any) -> Any:
    return jax.vmap(u)(x).sum()


def _batch_loss(w: Any, x: Any, y: Any) -> Any:
    return jax.vmap(loss, in_axes=(None, 0, 0))(w, x, y).sum()


def builtin_comparisons() -> list[TransformStackEvaluated]:
    """The comparisons, each result checked against its numpy closed form."""
    events: list[TransformStackEvaluated] = []
    xs = jnp.asarray(XS)
    x64 = XS.astype(np.float64)
    du = 3 * x64**2 + np.cos(x64)
    g = "per_example"

    e, out = evaluate(
        u,
        (xs,),
        ["vmap", "grad"],
        0,
        label="per-example derivatives",
        group=g,
        code="vmap(grad(u))(xs)",
    )
    _close(e, out, du, "numpy: 3x² + cos(x) at each x")
    events.append(e)
    e, _ = evaluate(
        u,
        (xs,),
        ["grad", "vmap"],
        0,
        label="grad of the batched function",
        group=g,
        code="grad(vmap(u))(xs)",
    )
    events.append(e)
    e, out = evaluate(
        _summed_u,
        (xs,),
        ["grad"],
        0,
        label="gradient of the summed outputs",
        group=g,
        code="grad(lambda x: vmap(u)(x).sum())(xs)",
    )
    e.stack = ["grad", "sum", "vmap"]
    _close(e, out, du, "numpy: 3x² + cos(x) (each output depends on its own x only)")
    events.append(e)

    for name, fn, a in (("tall", tall, A_TALL), ("wide", wide, A_WIDE)):
        x = jnp.linspace(-1.0, 1.0, a.shape[1], dtype=jnp.float32)
        z = a.astype(np.float64) @ np.asarray(x, dtype=np.float64)
        jac = (1 - np.tanh(z) ** 2)[:, None] * a.astype(np.float64)
        for chip in ("jacfwd", "jacrev"):
            e, out = evaluate(
                fn,
                (x,),
                [chip],
                0,
                label=f"{chip}, {name} Jacobian ({a.shape[0]}×{a.shape[1]})",
                group="jacobian",
                code=f"jit({chip}({name}))(x)",
                measure=True,
            )
            e.stack = ["jit", chip]  # measured under jax.jit (one compile: cost_analysis)
            _close(e, out, jac, "numpy: (1 − tanh²(A·x))·A")
            events.append(e)

    w, xb, yb = jnp.asarray(W), jnp.asarray(X), jnp.asarray(Y)
    resid = X.astype(np.float64) @ W.astype(np.float64) - Y.astype(np.float64)
    per_example = 2 * resid[:, None] * X.astype(np.float64)
    e, out = evaluate(
        loss,
        (w, xb, yb),
        ["vmap", "grad"],
        (None, 0, 0),
        label="per-example gradients, params not mapped",
        group="model",
        code="vmap(grad(loss), in_axes=(None, 0, 0))(w, x, y)",
        in_axes_text="(None, 0, 0)",
    )
    _close(e, out, per_example, "numpy: 2(x·w − y)·x for each example")
    events.append(e)
    e, _ = evaluate(
        loss,
        (w, xb, yb),
        ["vmap", "grad"],
        0,
        label="default in_axes=0: the params are mapped too",
        group="model",
        code="vmap(grad(loss))(w, x, y)",
        in_axes_text="0",
    )
    events.append(e)
    e, out = evaluate(
        _batch_loss,
        (w, xb, yb),
        ["grad"],
        0,
        label="the summed gradient",
        group="model",
        code="grad(lambda w, x, y: vmap(loss, (None, 0, 0))(w, x, y).sum())(w, x, y)",
    )
    e.stack = ["grad", "sum", "vmap"]
    _close(e, out, per_example.sum(axis=0), "numpy: the per-example gradients summed")
    events.append(e)
    return events
