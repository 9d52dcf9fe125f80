"""The custom_vjp lab's probe: check the user's ``jax.custom_vjp``/``jax.custom_jvp`` rule against
autodiff of the same math and against finite differences, show what ``fwd`` saves, and turn the
classic mistakes into clear problems that keep JAX's own error text.

Events, in order (one stepper step each):

* stage ``trace``: :class:`JaxprStaged`, ``jax.make_jaxpr(f)(*args)`` with its
  ``custom_vjp_call``/``custom_jvp_call`` eqn (absent when tracing ``f`` fails, e.g. an int
  argument of the custom function used as a shape: the jit attempt below reports that error).
* stage ``run``: ``f(*args)`` runs eagerly once with each custom function found in the snippet
  rebound to a recorder (``jaxscope.internals.custom_rules``), to learn which ones ``f`` calls
  and with what. Then, per custom function called:

  - :class:`CustomCallRecorded`: the leaves it received (avals, values, ``nondiff``, int),
    the residuals ``fwd`` returns on them (custom_vjp: ``fwd`` called eagerly), or (custom_jvp)
    ``jax.jvp`` of the function with its rule against ``jax.jvp`` of ``.fun``, same tangents;
  - :class:`CustomRuleChecked`: per floating leaf of ``args``, ``jax.grad(f)`` with the rule,
    ``jax.grad`` of ``f`` with the function rebound to its undecorated ``.fun`` (plain autodiff,
    the rule removed) and central differences in float64 (``jaxscope.finite_diff``); both the
    eager ``jax.grad(f)`` and ``jax.jit(jax.grad(f))`` attempts, and the problems found.

Errors raised by ``jax.grad`` with the user's rule are the exhibit's subject: they are shown as
problems (JAX's class and text verbatim, the snippet line) beside the other checks, not raised.
An error in ``f``'s forward pass (plain Python/JAX, no rule involved) propagates.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import (
    ArrayPreview,
    CallPlan,
    CustomFunction,
    InvalidSnippet,
    JaxprStaged,
    ProbeContext,
    RecordedCall,
    SourceLoc,
    aval_view,
    block_until_ready,
    central_differences,
    code_line,
    compare,
    error_source,
    exception_class,
    exception_text,
    find_custom_functions,
    is_float_leaf,
    is_memory_error,
    jaxpr_view,
    plan_call,
    preview_value,
    recording_calls,
    snippet_globals,
    tolerance,
    user_frames,
    without_rule,
)

from exhibits.custom_vjp import explain
from exhibits.custom_vjp.events import (
    ArgumentCheck,
    CustomArgView,
    CustomCallRecorded,
    CustomRuleChecked,
    GradientAttempt,
    RuleProblem,
    SavedResidual,
    TangentCheck,
)

PREVIEW_CHARS = 400


def nested(value: Any) -> Any:
    """An array as nested lists of floats, non-finite values as ``"nan"``/``"inf"``/``"-inf"``
    (``None`` stays ``None``)."""
    if value is None:
        return None
    arr = np.asarray(value, dtype=np.float64)

    def one(x: float) -> float | str:
        if np.isnan(x):
            return "nan"
        if np.isinf(x):
            return "inf" if x > 0 else "-inf"
        return float(x)

    if arr.ndim == 0:
        return one(float(arr))
    return [nested(a) for a in arr]


# ---- the gradient target: f as a function of its floating leaves -----------------------------


@dataclass
class Target:
    """``f`` as a function of its floating leaves ``diff`` and the other leaves ``rest`` of the
    traced (dynamic) arguments; static arguments are closed over, as ``jax.jit`` treats them."""

    plan: CallPlan
    treedef: Any
    float_index: list[int]
    paths: list[str]
    leaves: list[Any]

    @property
    def diff(self) -> list[Any]:
        return [self.leaves[i] for i in self.float_index]

    @property
    def rest(self) -> list[Any]:
        fi = set(self.float_index)
        return [x for i, x in enumerate(self.leaves) if i not in fi]

    def bind(self, fn: Callable[..., Any]) -> Callable[[list[Any], list[Any]], Any]:
        """``(diff, rest) -> fn(*args, **kwargs)`` with the leaves put back in place."""
        plan = self.plan
        static = set(plan.normalized_argnums())
        n_args = len(plan.args)
        fi = set(self.float_index)

        def call(diff: list[Any], rest: list[Any]) -> Any:
            it_d, it_r = iter(diff), iter(rest)
            leaves = [next(it_d) if i in fi else next(it_r) for i in range(len(self.leaves))]
            dyn, kw = jax.tree.unflatten(self.treedef, leaves)
            it = iter(dyn)
            full = [plan.args[i] if i in static else next(it) for i in range(n_args)]
            return fn(*full, **kw)

        return call


def _param_names(f: Any) -> list[str]:
    """``f``'s positional parameter names (``[]`` when unknown, or when ``f`` takes ``*args``)."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return []
    out = []
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            break
        out.append(p.name)
    return out


def make_target(plan: CallPlan) -> Target:
    """The :class:`Target` of a call plan (leaves named by ``f``'s parameter names)."""
    tree = (plan.dynamic_args(), plan.kwargs)
    with_path, treedef = jax.tree_util.tree_flatten_with_path(tree)
    static = set(plan.normalized_argnums())
    positions = [i for i in range(len(plan.args)) if i not in static]
    names = _param_names(plan.f)
    paths, leaves = [], []
    for path, leaf in with_path:
        if path[0].idx == 0:
            pos = positions[path[1].idx]
            label = names[pos] if pos < len(names) else f"args[{pos}]"
            paths.append(label + jax.tree_util.keystr(tuple(path[2:])))
        else:
            paths.append("kwargs" + jax.tree_util.keystr(tuple(path[1:])))
        leaves.append(leaf)
    float_index = [i for i, x in enumerate(leaves) if is_float_leaf(x)]
    if not float_index:
        raise InvalidSnippet(
            "`args` has no floating-point leaf to differentiate: give `f` at least one float"
            " argument (e.g. `args = (jnp.array([1.0, 2.0]),)`)"
        )
    return Target(plan, treedef, float_index, paths, leaves)


@dataclass
class Attempt:
    mode: str
    value: list[Any] | None
    error: BaseException | None

    def view(self) -> GradientAttempt:
        if self.error is None:
            return GradientAttempt(mode=self.mode, ok=True)  # type: ignore[arg-type]
        return GradientAttempt(
            mode=self.mode,  # type: ignore[arg-type]
            ok=False,
            error_class=exception_class(self.error),
            message=exception_text(self.error),
            source=error_source(self.error),
        )


def attempt(mode: str, thunk: Callable[[], Any]) -> Attempt:
    """Run a gradient computation; a failure is kept (it is what the exhibit shows)."""
    try:
        value = block_until_ready(thunk())
    except Exception as exc:
        return Attempt(mode, None, exc)
    return Attempt(mode, list(value), None)


# ---- what the custom function received, and what its rule makes of it --------------------------


def _is_int(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return True
    dtype = getattr(x, "dtype", None)
    return dtype is not None and np.issubdtype(np.dtype(dtype), np.integer)


def _is_tracer(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def _preview(x: Any) -> str | None:
    return None if _is_tracer(x) else preview_value(x, PREVIEW_CHARS)


def call_arg_views(custom: CustomFunction, call: RecordedCall) -> list[CustomArgView]:
    names = custom.param_names()
    out = []
    for pos, arg in enumerate(call.args):
        label = names[pos] if pos < len(names) else f"args[{pos}]"
        for path, leaf in jax.tree_util.tree_flatten_with_path(arg)[0]:
            out.append(
                CustomArgView(
                    position=pos,
                    path=label + jax.tree_util.keystr(path),
                    aval=aval_view(jax.typeof(leaf)),
                    preview=_preview(leaf),
                    nondiff=pos in custom.nondiff_argnums,
                    integer=_is_int(leaf),
                )
            )
    return out


def saved_residuals(custom: CustomFunction, call: RecordedCall) -> list[SavedResidual]:
    """``fwd(*args)[1]`` as leaves with key paths (``fwd`` called eagerly, as JAX does on
    concrete values); empty when there is no fwd, it fails, or it does not return a pair (the
    gradient attempt then reports JAX's own error)."""
    fwd = custom.rules.get("fwd")
    if fwd is None:
        return []
    try:
        out = fwd(*call.args)
    except Exception:
        return []
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        return []
    names = custom.param_names()
    inputs: dict[int, str] = {}
    for pos, arg in enumerate(call.args):
        label = names[pos] if pos < len(names) else f"args[{pos}]"
        for path, leaf in jax.tree_util.tree_flatten_with_path(arg)[0]:
            inputs.setdefault(id(leaf), label + jax.tree_util.keystr(path))
    views = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(out[1])[0]:
        views.append(
            SavedResidual(
                path="res" + jax.tree_util.keystr(path),
                aval=aval_view(jax.typeof(leaf)),
                preview=_preview(leaf),
                input_path=inputs.get(id(leaf)),
            )
        )
    return views


def jvp_check(
    custom: CustomFunction, call: RecordedCall
) -> tuple[list[ArrayPreview], list[TangentCheck], BaseException | None, BaseException | None]:
    """custom_jvp: ``jax.jvp`` of the function (its rule) and of ``.fun`` (autodiff) at the
    arguments it received, on the floating leaves of the arguments not in ``nondiff_argnums``,
    with the same fixed pseudo-random tangents. Returns the tangents, the per-output checks,
    and the errors of each side (``None`` when it ran)."""
    if any(_is_tracer(x) for x in jax.tree.leaves(call.args)):
        return [], [], None, None
    names = custom.param_names()
    flat, treedef = jax.tree_util.tree_flatten_with_path(call.args)
    diff_idx = [
        i
        for i, (path, leaf) in enumerate(flat)
        if path[0].idx not in custom.nondiff_argnums and is_float_leaf(leaf)
    ]
    if not diff_idx:
        return [], [], None, None
    leaves = [leaf for _, leaf in flat]
    rng = np.random.default_rng(0)
    primals = [jax.numpy.asarray(leaves[i]) for i in diff_idx]
    tangents = [rng.standard_normal(np.shape(p)).astype(p.dtype) for p in primals]

    def on(fn: Callable[..., Any]) -> Callable[..., Any]:
        def g(*d: Any) -> Any:
            full = list(leaves)
            for i, x in zip(diff_idx, d, strict=True):
                full[i] = x
            return fn(*jax.tree.unflatten(treedef, full))

        return g

    def run(fn: Callable[..., Any]) -> tuple[Any, BaseException | None]:
        try:
            return jax.jvp(on(fn), primals, tangents)[1], None
        except Exception as exc:
            return None, exc

    t_custom, e_custom = run(custom.obj)
    t_auto, e_auto = run(custom.fun)
    previews = []
    for i, t in zip(diff_idx, tangents, strict=True):
        path = flat[i][0]
        pos = path[0].idx
        label = names[pos] if pos < len(names) else f"args[{pos}]"
        previews.append(
            ArrayPreview(
                path=label + jax.tree_util.keystr(tuple(path[1:])),
                shape=list(np.shape(t)),
                dtype=str(t.dtype),
                preview=preview_value(t, PREVIEW_CHARS),
            )
        )
    checks = []
    if t_custom is not None:
        auto_leaves = jax.tree.leaves(t_auto) if t_auto is not None else None
        for k, (path, tc) in enumerate(jax.tree_util.tree_flatten_with_path(t_custom)[0]):
            ta = auto_leaves[k] if auto_leaves is not None and k < len(auto_leaves) else None
            diff, ok = (None, False) if ta is None else compare(tc, ta, None, tolerance(tc.dtype))
            checks.append(
                TangentCheck(
                    path="out" + jax.tree_util.keystr(path),
                    aval=aval_view(jax.typeof(tc)),
                    custom=nested(tc),
                    autodiff=nested(ta),
                    max_abs_diff=diff,
                    agrees=None if ta is None else ok,
                )
            )
    return previews, checks, e_custom, e_auto


# ---- the probe -----------------------------------------------------------------------------


def run(ctx: ProbeContext) -> None:
    """Run the custom_vjp lab on ``ctx.snippet``."""
    snippet = ctx.snippet
    plan = plan_call(snippet)
    customs = find_custom_functions(snippet.namespace, snippet.f)
    if not customs:
        raise InvalidSnippet(
            "no `jax.custom_vjp` or `jax.custom_jvp` function found: define one at the top level"
            " of the snippet (e.g. `@jax.custom_vjp def g(x): ...` with `g.defvjp(fwd, bwd)`)"
            " and call it in `f`"
        )
    glb = snippet_globals(snippet.f)
    target = make_target(plan)

    with ctx.stage("trace"):
        try:
            closed = plan.make_jaxpr()
        except Exception:
            closed = None
    if closed is not None:
        ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(closed)))

    with ctx.stage("run"):
        calls, out = record_calls(plan, customs, glb)
        called = [c for c in customs if calls[id(c.obj)]]
        if not called:
            names = ", ".join(n for c in customs for n in (c.names or [c.name]))
            raise InvalidSnippet(
                f"`f` never called the custom function(s) found in the snippet ({names}): call"
                " one by its global name inside `f` (or make `f` the custom function)"
            )
        if np.shape(out) != ():
            raise InvalidSnippet(
                f"`f` must return a scalar (the lab compares gradients), got shape {np.shape(out)}"
            )
        grad_fn = jax.grad(target.bind(plan.fun))
        eager = attempt("eager", lambda: grad_fn(target.diff, target.rest))
        jitted = attempt("jit", lambda: jax.jit(grad_fn)(target.diff, target.rest))
        if jitted.error is not None:
            plain_jit_failure(plan, called, glb)
        fd = finite_differences(target)

        for custom in called:
            call = calls[id(custom.obj)][0]
            recorded, jvp_errors = recorded_event(custom, call)
            ctx.emit(recorded)
            auto = attempt("eager", functools.partial(autodiff_gradient, target, plan, custom, glb))
            if same_error_in_f(eager.error, auto.error):
                assert eager.error is not None
                raise eager.error
            ctx.emit(
                rule_checked(custom, call, recorded, jvp_errors, target, eager, jitted, auto, fd)
            )


def record_calls(
    plan: CallPlan, customs: Sequence[CustomFunction], glb: dict[str, Any] | None
) -> tuple[dict[int, list[RecordedCall]], Any]:
    """Run ``f`` eagerly once with every custom function rebound to a recorder; the calls of
    each (by ``id`` of the custom object) and ``f``'s output."""
    calls: dict[int, list[RecordedCall]] = {}
    with contextlib.ExitStack() as stack:
        for c in customs:
            if c.is_f:
                continue
            if glb is not None and c.names:
                calls[id(c.obj)] = stack.enter_context(recording_calls(glb, c))
            else:
                calls[id(c.obj)] = []
        f_custom = next((c for c in customs if c.is_f), None)
        if f_custom is not None:
            own: list[RecordedCall] = []
            calls[id(f_custom.obj)] = own
            args, kwargs = plan.args, {**plan.kwargs, **plan.static_kwargs}
            own.append(RecordedCall(args=_resolve_args(f_custom, args, kwargs), source=None))
        out = block_until_ready(plan.call(plan.f))
    return calls, out


def plain_jit_failure(
    plan: CallPlan, called: Sequence[CustomFunction], glb: dict[str, Any] | None
) -> None:
    """Raise what the plain transform of the jit attempt raises inside the snippet: plain
    ``jax.jit(f)(*args)`` with every custom function rebound to its undecorated ``.fun`` (no
    rule, no custom_vjp machinery: JAX's own rules). Called once ``jax.jit(jax.grad(f))``
    failed. When that fails too, at a line of the snippet (a Python ``if`` or ``int()`` on a
    traced value in ``f``), the error is ``f``'s own, not the rule's: the run fails at that
    line, as every other exhibit's does, instead of finishing with it among the problems. An
    int argument of the custom function used as a shape (C20) fails only with the custom
    function in place: the rule's problem, shown."""
    fun = next((c.fun for c in called if c.is_f), plan.f)
    jitted = jax.jit(fun, static_argnums=plan.static_argnums, static_argnames=plan.static_argnames)
    with contextlib.ExitStack() as stack:
        for c in called:
            if not c.is_f and glb is not None and c.names:
                stack.enter_context(without_rule(glb, c))
        try:
            block_until_ready(plan.call(jitted))
        except Exception as exc:
            if is_memory_error(exc) or user_frames(exc.__traceback__):
                raise


def same_error_in_f(with_rule: BaseException | None, without: BaseException | None) -> bool:
    """Whether ``jax.grad(f)`` with the rule and with the rule removed (plain autodiff: the
    plain transform) failed alike: the same class and text, raised at the same snippet line.
    Then the rule is not what JAX rejected: the error is ``f``'s own, and the run fails."""
    if with_rule is None or without is None or type(with_rule) is not type(without):
        return False
    if exception_text(with_rule) != exception_text(without):
        return False
    here, there = user_frames(with_rule.__traceback__), user_frames(without.__traceback__)
    return bool(here) and bool(there) and here[-1].line == there[-1].line


def _resolve_args(
    custom: CustomFunction, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, ...]:
    if not kwargs:
        return tuple(args)
    bound = inspect.signature(custom.fun).bind(*args, **kwargs)
    return tuple(bound.args) + tuple(bound.kwargs.values())


def autodiff_gradient(
    target: Target, plan: CallPlan, custom: CustomFunction, glb: dict[str, Any] | None
) -> list[Any]:
    """``jax.grad`` of ``f`` with ``custom`` replaced by its undecorated ``.fun``."""
    if custom.is_f:
        fun = custom.fun
        if plan.static_kwargs:
            fun = functools.partial(fun, **plan.static_kwargs)
        return list(jax.grad(target.bind(fun))(target.diff, target.rest))
    if glb is None:
        raise RuntimeError("f was not defined in the snippet: cannot rebind the custom function")
    with without_rule(glb, custom) as count:
        value = jax.grad(target.bind(plan.fun))(target.diff, target.rest)
    if count[0] == 0:
        raise RuntimeError(f"f did not call {custom.name} by name: cannot remove its rule")
    return list(value)


@dataclass
class FD:
    values: list[Any] | None
    known: list[Any] | None
    error: BaseException | None


def finite_differences(target: Target) -> FD:
    try:
        res = central_differences(target.bind(target.plan.fun), [target.diff, target.rest], [0])
    except Exception as exc:
        return FD(None, None, exc)
    return FD(list(res.values[0]), list(res.known[0]), None)


def _source(fn: Any) -> SourceLoc | None:
    line = code_line(fn)
    return None if line is None else SourceLoc(line=line, function=getattr(fn, "__name__", None))


def recorded_event(
    custom: CustomFunction, call: RecordedCall
) -> tuple[CustomCallRecorded, tuple[BaseException | None, BaseException | None]]:
    """The :class:`CustomCallRecorded` step, and (custom_jvp) the errors of ``jax.jvp`` with
    the rule and of ``.fun``."""
    tangents: list[ArrayPreview] = []
    checks: list[TangentCheck] = []
    errors: tuple[BaseException | None, BaseException | None] = (None, None)
    if custom.kind == "custom_jvp":
        tangents, checks, e_custom, e_auto = jvp_check(custom, call)
        errors = (e_custom, e_auto)
    event = CustomCallRecorded(
        name=custom.name,
        kind=custom.kind,
        source=_source(custom.fun),
        call_source=call.source,
        rule_names={role: getattr(fn, "__name__", repr(fn)) for role, fn in custom.rules.items()},
        rule_lines={
            role: line for role, fn in custom.rules.items() if (line := code_line(fn)) is not None
        },
        nondiff_argnums=list(custom.nondiff_argnums),
        call_args=call_arg_views(custom, call),
        residuals=saved_residuals(custom, call) if custom.kind == "custom_vjp" else [],
        tangents_in=tangents,
        jvp_check=checks,
    )
    return event, errors


def rule_checked(
    custom: CustomFunction,
    call: RecordedCall,
    recorded: CustomCallRecorded,
    jvp_errors: tuple[BaseException | None, BaseException | None],
    target: Target,
    eager: Attempt,
    jitted: Attempt,
    auto: Attempt,
    fd: FD,
) -> CustomRuleChecked:
    arguments = []
    for k, leaf_index in enumerate(target.float_index):
        leaf = target.leaves[leaf_index]
        dtype = np.asarray(leaf).dtype if not isinstance(leaf, float) else np.dtype(np.float32)
        tol = tolerance(eager.value[k].dtype if eager.value is not None else dtype)
        custom_g = eager.value[k] if eager.value is not None else None
        auto_g = auto.value[k] if auto.value is not None else None
        fd_v = fd.values[k] if fd.values is not None else None
        fd_known = fd.known[k] if fd.known is not None else None
        d_auto, ok_auto = (
            (None, None)
            if custom_g is None or auto_g is None
            else compare(custom_g, auto_g, None, tol)
        )
        d_fd, ok_fd = (
            (None, None)
            if custom_g is None or fd_v is None
            else compare(custom_g, fd_v, fd_known, tol)
        )
        fd_nested = None
        if fd_v is not None:
            fd_nested = _mask_unknown(nested(fd_v), np.asarray(fd_known, bool))
        arguments.append(
            ArgumentCheck(
                path=target.paths[leaf_index],
                aval=aval_view(jax.typeof(leaf)),
                custom=nested(custom_g),
                autodiff=nested(auto_g),
                finite_difference=fd_nested,
                max_abs_diff_autodiff=d_auto,
                max_abs_diff_fd=d_fd,
                agrees_autodiff=ok_auto,
                agrees_fd=ok_fd,
                tolerance=tol,
            )
        )
    problems = explain.problems(
        custom, call, recorded, jvp_errors, arguments, eager, jitted, auto, fd.error
    )
    verdict = "error" if eager.error is not None else "agrees"
    for a in arguments:
        # Finite differences are the truth where they exist; autodiff where they do not.
        truth_ok = a.agrees_fd if a.agrees_fd is not None else a.agrees_autodiff
        if truth_ok is False and verdict == "agrees":
            verdict = "differs"
    return CustomRuleChecked(
        name=custom.name,
        kind=custom.kind,
        nondiff_argnums=list(custom.nondiff_argnums),
        arguments=arguments,
        attempts=[_at_rule(eager.view(), problems), _at_rule(jitted.view(), problems)],
        problems=problems,
        verdict=verdict,  # type: ignore[arg-type]
    )


# Problems whose line is the rule's (bwd's return), where JAX's traceback ends elsewhere.
_AT_RULE = ("bwd_structure", "bwd_shape")


def _at_rule(view: GradientAttempt, problems: Sequence[RuleProblem]) -> GradientAttempt:
    """A failed attempt whose error is a bwd output JAX rejected (a ``bwd_structure``/
    ``bwd_shape`` problem with the same message) takes that problem's line (bwd's return), so
    the attempt chip and the CLI's shown error point where the problem does; JAX's own line
    (the call in ``f`` where its traceback ends) is named in the problem's explanation."""
    if view.ok:
        return view
    for p in problems:
        if p.kind in _AT_RULE and p.source is not None and p.error_message == view.message:
            return view.model_copy(update={"source": p.source})
    return view


def _mask_unknown(values: Any, known: np.ndarray) -> Any:
    if known.ndim == 0:
        return values if bool(known) else None
    return [_mask_unknown(v, k) for v, k in zip(values, known, strict=True)]
