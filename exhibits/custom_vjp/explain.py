"""The custom_vjp lab's problems: JAX's errors and the value comparisons, turned into clear
sentences (``RuleProblem``), JAX's own error class and text kept verbatim.

JAX's messages are recognised by the start of their text (``jax/_src/custom_derivatives.py``:
``_flatten_bwd``, ``_flatten_fwd``, ``_flatten_jvp``); a message not recognised is still shown,
as ``grad_failed``/``jit_failed`` with JAX's text.

:func:`explain_error` is this exhibit's link of ``jaxscope.explainers``' chain (listed through the
registry's ``explains_errors``): the ``run_failed`` explanation of a ``custom_vjp`` error in any
exhibit, with the bwd at fault named for an output JAX rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import numpy as np
from jaxscope.exhibit_api import (
    CustomFunction,
    ErrorContext,
    Explanation,
    MessageHelp,
    RecordedCall,
    SourceLoc,
    error_source,
    exception_class,
    exception_text,
    first_match,
    rejected_bwd,
    return_source,
    snippet_globals,
)

from exhibits.custom_vjp.events import ArgumentCheck, CustomCallRecorded, RuleProblem

if TYPE_CHECKING:
    from exhibits.custom_vjp.probe import Attempt

BWD_STRUCTURE = "Custom VJP bwd rule must produce an output with the same container"
BWD_TYPE = "Custom VJP bwd rule must produce an output with the same type"
FWD_RULE = "Custom VJP fwd rule"
JVP_RULE = "Custom JVP rule must produce"

_ORDER = {"error": 0, "warning": 1, "note": 2}


class _ErrorFields(TypedDict):
    """The fields every :class:`RuleProblem` made from a JAX error shares (``classify_error``)."""

    error_class: str
    error_message: str
    source: SourceLoc | None
    severity: Literal["error", "warning", "note"]


def _fmt(x: float | None) -> str:
    return "an unbounded amount (a NaN or Inf on one side only)" if x is None else f"{x:.3g}"


def _first(values: Any, limit: int = 6) -> str:
    """A short printout of nested numbers (4 significant digits, at most ``limit`` numbers)."""
    flat: list[Any] = []

    def walk(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                walk(x)
        else:
            flat.append(v)

    walk(values)
    parts = [f"{x:.4g}" if isinstance(x, float) else str(x) for x in flat[:limit]]
    more = ", …" if len(flat) > limit else ""
    if not isinstance(values, list):
        return parts[0] if parts else str(values)
    return "[" + ", ".join(parts) + more + "]"


def _diff_names(custom: CustomFunction, call: RecordedCall) -> list[str]:
    names = custom.param_names()
    return [
        names[i] if i < len(names) else f"args[{i}]"
        for i in range(len(call.args))
        if i not in custom.nondiff_argnums
    ]


def _only_autodiff_nonfinite(custom: Any, autodiff: Any) -> bool:
    """True when every disagreement is a NaN/Inf of autodiff where the rule is finite."""
    c = np.asarray(_floats(custom), dtype=np.float64)
    a = np.asarray(_floats(autodiff), dtype=np.float64)
    if c.shape != a.shape or not np.all(np.isfinite(c)):
        return False
    return bool(np.any(~np.isfinite(a)))


def _floats(values: Any) -> Any:
    if isinstance(values, list):
        return [_floats(v) for v in values]
    if isinstance(values, str):
        return float(values)
    return np.nan if values is None else values


def _int_args(recorded: CustomCallRecorded) -> list[tuple[int, str, str | None]]:
    """``(position, path, preview)`` of the int leaves at positions not in nondiff_argnums."""
    return [
        (a.position, a.path, a.preview) for a in recorded.call_args if a.integer and not a.nondiff
    ]


def classify_error(
    exc: BaseException,
    mode: str,
    custom: CustomFunction,
    call: RecordedCall,
    recorded: CustomCallRecorded,
    other_ok: bool,
) -> RuleProblem:
    """A :class:`RuleProblem` for an error ``jax.grad`` raised with the user's rule."""
    msg = exception_text(exc)
    src = error_source(exc)
    common: _ErrorFields = {
        "error_class": exception_class(exc),
        "error_message": msg,
        "source": src,
        "severity": "error",
    }
    name = custom.name
    bwd = recorded.rule_names.get("bwd", "bwd")
    bwd_line = recorded.rule_lines.get("bwd")
    at_bwd = f" ({bwd} is defined at line {bwd_line})" if bwd_line else ""
    # JAX checks bwd's output after bwd returned, so its traceback ends at the call in f: point
    # at bwd's return instead (the attempt takes this line too: probe._at_rule).
    at_return = return_source(custom.rules.get("bwd")) or src
    # Where JAX's own traceback ends (the call in f), said in words where the problem points
    # elsewhere: the attempt chip and the CLI show the problem's line (probe._at_rule).
    jax_line = (
        f" JAX's traceback ends at line {src.line} ({src.function}), where {name} is called:"
        " JAX checks bwd's output only after bwd has returned, so no line of bwd is on it."
        if src is not None and at_return is not None and src.line != at_return.line
        else ""
    )
    if msg.startswith(BWD_STRUCTURE):
        common["source"] = at_return
        diff = _diff_names(custom, call)
        ints = _int_args(recorded)
        int_hint = ""
        if ints:
            listed = ", ".join(p for _, p, _ in ints)
            int_hint = (
                f" Here {listed} is an int: it gets no cotangent, so either return None for it,"
                " or better, declare it in nondiff_argnums."
            )
        return RuleProblem(
            kind="bwd_structure",
            title=(
                f"{bwd} must return {len(diff)} cotangent{'s' if len(diff) != 1 else ''}, one per"
                f" argument of {name} ({', '.join(diff)}), as a tuple{at_bwd}."
            ),
            explanation=(
                "custom_vjp treats every positional argument not listed in nondiff_argnums as a"
                " primal input, so bwd must return a tuple with exactly one entry per such"
                " argument, in order: a cotangent with that argument's structure, shape and dtype,"
                " or None for an argument that gets no gradient. JAX compares the two pytree"
                " structures in its message below." + int_hint + jax_line
            ),
            **common,
        )
    if msg.startswith(BWD_TYPE):
        common["source"] = at_return
        detail = msg.split("but at ", 1)[1] if "but at " in msg else msg
        return RuleProblem(
            kind="bwd_shape",
            title=(
                f"{bwd} returned a cotangent of the wrong shape or dtype: at"
                f" {detail.splitlines()[0] if detail else ''}"
            ),
            explanation=(
                "Each cotangent bwd returns must have the same shape and dtype as the primal"
                " argument it belongs to (a cotangent lives where the argument lives). A"
                " broadcast the forward pass did (a scalar times a vector) has to be summed"
                " back in bwd, e.g. `jnp.sum(g * x)` for a scalar argument." + at_bwd + jax_line
            ),
            **common,
        )
    if msg.startswith(FWD_RULE):
        fwd = recorded.rule_names.get("fwd", "fwd")
        if "instead of a pair" in msg:
            return RuleProblem(
                kind="fwd_not_pair",
                title=f"{fwd} must return a pair (output, residuals).",
                explanation=(
                    f"JAX calls {fwd} in place of {name} on the forward pass: it must return the"
                    f" same output as {name} and, second, the residuals bwd will need (any pytree"
                    " of arrays, e.g. a tuple). Write `return out, (x, y)`, not `return out`."
                ),
                **common,
            )
        return RuleProblem(
            kind="fwd_output",
            title=f"The first element {fwd} returns must be exactly what {name} returns.",
            explanation=(
                f"{fwd}'s output replaces {name}'s on the forward pass, so it must have the same"
                " structure, shapes and dtypes; JAX's message shows both."
            ),
            **common,
        )
    if msg.startswith(JVP_RULE):
        return RuleProblem(
            kind="jvp_rule",
            title=f"The jvp rule of {name} returned outputs JAX cannot accept.",
            explanation=(
                "A custom_jvp rule returns (primal_out, tangent_out): primal_out exactly as the"
                " function returns it, tangent_out with the same structure, shapes and dtypes."
            ),
            **common,
        )
    if mode == "jit":
        ints = _int_args(recorded)
        if ints:
            _, path, preview = ints[0]
            why = (
                f" {name}'s argument {path} (= {preview}) is an int that is not in"
                f" nondiff_argnums: custom_vjp makes it a primal input, so under jit it is traced"
                " like the array arguments and has no concrete value (it cannot be a shape, a"
                " loop bound or a Python `if`)."
            )
        else:
            why = ""
        return RuleProblem(
            kind="jit_failed",
            title=(
                "jax.grad(f) works eagerly, but jax.jit(jax.grad(f)) fails"
                if other_ok
                else "jax.jit(jax.grad(f)) fails too"
            )
            + (f" at line {src.line}." if src else "."),
            explanation=(
                "Eagerly, JAX runs f on concrete values; under jax.jit every argument is an"
                " abstract tracer (shape and dtype only)." + why
            ),
            **common,
        )
    return RuleProblem(
        kind="grad_failed",
        title=f"jax.grad(f) failed{f' at line {src.line}' if src else ''}.",
        explanation=(
            "The error is shown below as it was raised: JAX's own text, or your rule's"
            " (fwd/bwd) own exception."
        ),
        **common,
    )


def problems(
    custom: CustomFunction,
    call: RecordedCall,
    recorded: CustomCallRecorded,
    jvp_errors: tuple[BaseException | None, BaseException | None],
    arguments: Sequence[ArgumentCheck],
    eager: Attempt,
    jitted: Attempt,
    auto: Attempt,
    fd_error: BaseException | None,
) -> list[RuleProblem]:
    """Every problem found for one custom function, errors first."""
    out: list[RuleProblem] = []
    if eager.error is not None:
        out.append(classify_error(eager.error, "eager", custom, call, recorded, False))
    if jitted.error is not None and (
        eager.error is None or exception_text(jitted.error) != exception_text(eager.error)
    ):
        out.append(classify_error(jitted.error, "jit", custom, call, recorded, eager.error is None))
    ints = _int_args(recorded)
    if ints:
        listed = ", ".join(f"{path} (= {preview})" for _, path, preview in ints)
        positions = sorted({pos for pos, _, _ in ints} | set(custom.nondiff_argnums))
        nd = ", ".join(str(p) for p in positions) + ("," if len(positions) == 1 else "")
        decorator = "jax." + custom.kind
        out.append(
            RuleProblem(
                kind="int_not_nondiff",
                severity="error" if jitted.error is not None else "warning",
                title=(
                    f"{listed}: an int argument of {custom.name} not declared in nondiff_argnums."
                ),
                explanation=(
                    f"{decorator} treats every positional argument as a primal that gets a"
                    " cotangent, ints included: under jax.jit it is traced (no concrete value,"
                    " so it cannot be a shape) and bwd must return a cotangent (None) for it."
                    f" Declare it: `@partial({decorator}, nondiff_argnums=({nd}))`. It then stays"
                    " a Python value, bwd receives it first (`def bwd(n, res, g)`) and returns"
                    " cotangents for the other arguments only."
                ),
                argument=ints[0][1],
                source=recorded.source,
            )
        )
    e_custom, _ = jvp_errors
    if e_custom is not None and eager.error is None:
        out.append(classify_error(e_custom, "eager", custom, call, recorded, False))
    for check in recorded.jvp_check:
        if check.agrees is False and _only_autodiff_nonfinite(check.custom, check.autodiff):
            out.append(
                RuleProblem(
                    kind="autodiff_failed",
                    severity="note",
                    title=(
                        f"Your jvp rule gives finite tangents where autodiff of {custom.name}"
                        f" gives {_first(check.autodiff)}."
                    ),
                    explanation=(
                        "JAX's rules applied to the formula overflow here (e.g. exp of a large"
                        " number is inf, and inf / inf is nan); the rule's formula does not."
                        " This is what a custom_jvp is for."
                    ),
                    argument=check.path,
                )
            )
        elif check.agrees is False:
            out.append(
                RuleProblem(
                    kind="jvp_differs",
                    severity="warning",
                    title=(
                        f"Your jvp rule's tangent output {check.path} disagrees with autodiff of"
                        f" {custom.name} by {_fmt(check.max_abs_diff)}."
                    ),
                    explanation=(
                        f"jax.jvp of {custom.name} (your rule) and of its undecorated function"
                        " (JAX's rules), same primals and tangents, give different tangents."
                    ),
                    argument=check.path,
                )
            )
    if auto.error is not None:
        out.append(
            RuleProblem(
                kind="autodiff_failed",
                severity="note",
                title=(
                    "Autodiff of the same math without the rule failed:"
                    f" {exception_class(auto.error)}."
                ),
                explanation=(
                    "The autodiff column is empty: JAX could not differentiate the undecorated"
                    " function (a common reason to write a custom rule)."
                ),
                error_class=exception_class(auto.error),
                error_message=exception_text(auto.error),
                source=error_source(auto.error),
            )
        )
    for a in arguments:
        if a.agrees_autodiff is False and a.agrees_fd is True:
            out.append(
                RuleProblem(
                    kind="autodiff_failed",
                    severity="note",
                    title=(
                        f"On {a.path} your rule agrees with finite differences, and plain"
                        f" autodiff does not (it gives {_first(a.autodiff)})."
                    ),
                    explanation=(
                        "This is what a custom rule is for: JAX's rules applied to the"
                        " function's formula overflow or lose precision here, while the"
                        " derivative you wrote is the true one."
                    ),
                    argument=a.path,
                )
            )
        elif a.agrees_autodiff is False:
            fd_note = (
                f" Finite differences give {_first(a.finite_difference)}."
                if a.finite_difference is not None
                else ""
            )
            out.append(
                RuleProblem(
                    kind="differs_autodiff",
                    severity="warning",
                    title=(
                        f"Your rule disagrees with autodiff by {_fmt(a.max_abs_diff_autodiff)} on"
                        f" argument {a.path}."
                    ),
                    explanation=(
                        f"jax.grad(f) with your rule gives {_first(a.custom)}; with {custom.name}"
                        f" replaced by its undecorated function, JAX's own rules give"
                        f" {_first(a.autodiff)}.{fd_note} Look for a sign, a missing factor or a"
                        " swapped residual in the rule. If the rule changes the gradient on"
                        " purpose (gradient clipping, a straight-through estimator), this"
                        " difference is the point."
                    ),
                    argument=a.path,
                )
            )
        elif a.agrees_fd is False:
            out.append(
                RuleProblem(
                    kind="differs_fd",
                    severity="warning",
                    title=(
                        f"Your rule and autodiff agree on {a.path}, but finite differences differ"
                        f" by {_fmt(a.max_abs_diff_fd)}."
                    ),
                    explanation=(
                        "Both derivatives say one thing and the function's values another: f may"
                        " not be smooth at these arguments, or lose precision (float32)."
                    ),
                    argument=a.path,
                )
            )
    if fd_error is not None:
        out.append(
            RuleProblem(
                kind="grad_failed",
                severity="note",
                title="Finite differences could not be computed (f failed in float64).",
                explanation="The finite-difference column is empty.",
                error_class=exception_class(fd_error),
                error_message=exception_text(fd_error),
                source=error_source(fd_error),
            )
        )
    return sorted(out, key=lambda p: _ORDER[p.severity])


# ---- the run_failed explanation (a link of jaxscope.explainers' chain) ----------------------

JVP_OF_CUSTOM_VJP = "can't apply forward-mode autodiff (jvp) to a custom_vjp function"
TRACED_SHAPE = "Shapes must be 1D sequences of concrete values"

CUSTOM_VJP_HELP: tuple[MessageHelp, ...] = (
    MessageHelp(
        BWD_STRUCTURE,
        "A `custom_vjp` bwd rule must return one cotangent per positional argument of the"
        " primal function (a tuple of the same structure), including arguments such as sizes"
        " that are not differentiated.",
        "Return `None` for an argument that gets no cotangent, or, better for a Python int"
        " such as a size, declare it in `nondiff_argnums` (bwd then receives it first and"
        " returns cotangents for the other arguments only).",
    ),
    MessageHelp(
        BWD_TYPE,
        "Each cotangent a `custom_vjp` bwd rule returns must have the shape and dtype of the"
        " primal argument it belongs to (a cotangent lives where its argument lives); JAX's"
        " message names the output position and both types.",
        "Give that cotangent the argument's shape: a broadcast the forward pass did (a scalar"
        " times a vector) is summed back in bwd, e.g. `jnp.sum(g * x)` for a scalar argument.",
    ),
    MessageHelp(
        JVP_OF_CUSTOM_VJP,
        "`jax.custom_vjp` gives JAX a reverse-mode rule only (`fwd` saves residuals, `bwd` maps"
        " an output cotangent back to the inputs). Forward mode (`jax.jvp`, `jax.jacfwd`) needs"
        " a JVP rule that pushes input tangents forward, and JAX cannot derive one from `bwd`,"
        " so it refuses the `custom_vjp` call instead of differentiating what is inside it.",
        "Use reverse mode on this function (`jax.grad`, `jax.vjp`, `jax.jacrev`), or define the"
        " rule with `jax.custom_jvp` instead: JAX derives reverse mode from a JVP rule (it"
        " linearizes and transposes it), so both modes then work.",
    ),
    MessageHelp(
        (TRACED_SHAPE, "for custom_vjp fun"),
        "JAX traced the `custom_vjp` function here (as it does under `jax.jit`,"
        " `jax.make_jaxpr`, or any transformation that stages it out), and a `custom_vjp`"
        " function gets every positional argument as a tracer, Python ints included. So a size"
        " passed as an argument (`jnp.zeros((n,))`) is abstract (shape and dtype only), and an"
        " array shape must be concrete.",
        "Declare the size in `nondiff_argnums` (`@partial(jax.custom_vjp, nondiff_argnums=(i,))`:"
        " it then stays a Python int, and `fwd`/`bwd` receive it first), or take the size from"
        " an array's `.shape`.",
    ),
)


def _bwd_note(exc: BaseException, f: object) -> str | None:
    """For JAX's error about a ``custom_vjp`` bwd's output, the rule at fault (name, where it
    returns): JAX checks the output after bwd returned, so its traceback ends at the call of
    the custom function and never names bwd. None for another error or when it is not found."""
    try:
        bwd = rejected_bwd(exc, snippet_globals(f) if f is not None else None)
    except Exception:  # the explanation stays JAX's help alone
        return None
    if bwd is None:
        return None
    at = f"line {bwd.returns.line}" if bwd.returns is not None else "an unknown line"
    defined = f", defined at line {bwd.def_line}" if bwd.def_line is not None else ""
    return (
        f"The rule at fault is `{bwd.name}`{defined} (the bwd of `{bwd.custom}`): it returns"
        f" at {at}. JAX checks what bwd returned only after it returned, so its traceback ends"
        f" at the call of `{bwd.custom}` instead."
    )


def explain_error(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation and fix of one of JAX's ``custom_vjp`` errors, else None. For a bwd
    output JAX rejected, the bwd at fault is named after the explanation (after the location's
    own note when no entry matches, e.g. a bwd that returned a ``SymbolicZero``)."""
    help_ = first_match(CUSTOM_VJP_HELP, exc)
    note = _bwd_note(exc, ctx.f)
    if note is None:
        return help_
    base = help_.explanation if help_ is not None else ctx.location_note
    return Explanation(
        note if base is None else f"{base} {note}", help_.fix if help_ is not None else None
    )
