"""The custom_vjp exhibit's events: ``custom_call_recorded`` (what a ``custom_vjp``/``custom_jvp``
function received, what ``fwd`` saved) and ``custom_rule_checked`` (its gradient against
autodiff without the rule and finite differences, the mistakes found).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import (
    ArrayPreview,
    AvalView,
    EventBase,
    NestedNumbers,
    SourceLoc,
    WireModel,
)


class ArgumentCheck(WireModel):
    """One floating leaf of ``f``'s arguments, its gradient three ways.

    ``path`` the leaf's key path (``args[0][1]``) and ``aval`` its aval; ``custom`` is
    ``jax.grad`` of ``f`` with the custom rule (``None`` when that failed); ``autodiff``
    ``jax.grad`` of the same math with the custom function replaced by its undecorated ``.fun``
    (the rule removed); ``finite_difference`` central differences in float64
    (``jaxscope.finite_diff``; ``None`` entries at kinks). ``max_abs_diff_*`` is the largest
    absolute difference of ``custom`` to each (``None`` when one side is missing);
    ``agrees_*`` whether that is within ``tolerance`` (absolute, scaled by ``max(1, |ref|)``:
    1e-4 for float32, 1e-6 for float64).
    """

    path: str
    aval: AvalView
    custom: NestedNumbers
    autodiff: NestedNumbers
    finite_difference: NestedNumbers
    max_abs_diff_autodiff: float | None
    max_abs_diff_fd: float | None
    agrees_autodiff: bool | None = None
    agrees_fd: bool | None = None
    tolerance: float


class CustomArgView(WireModel):
    """One leaf of the arguments the custom function received in ``f`` (its first call).

    ``position`` the positional argument it belongs to, ``path`` its key path
    (``args[2]``), ``preview`` the value (``None`` when it was a tracer), ``nondiff`` whether
    ``position`` is in ``nondiff_argnums``, ``integer`` whether it is an int (a Python int or an
    integer dtype: no cotangent exists for it).
    """

    position: int
    path: str
    aval: AvalView
    preview: str | None = None
    nondiff: bool = False
    integer: bool = False


class SavedResidual(WireModel):
    """One leaf of the residuals ``fwd`` returned (the second element of its pair), called
    eagerly on the arguments the custom function received: ``path`` its key path in the
    residual pytree (``res[0]``), ``input_path`` the argument it is (by identity), if any
    (JAX then saves no copy: ``_filter_forwarded_inputs``)."""

    path: str
    aval: AvalView
    preview: str | None = None
    input_path: str | None = None


class TangentCheck(WireModel):
    """``custom_jvp`` only: one output leaf of ``jax.jvp`` of the custom function at the
    arguments it received, with the rule (``custom``) and of ``.fun`` (``autodiff``), same
    tangents in; ``max_abs_diff`` between them."""

    path: str
    aval: AvalView
    custom: NestedNumbers
    autodiff: NestedNumbers
    max_abs_diff: float | None
    agrees: bool | None = None


class GradientAttempt(WireModel):
    """One way of taking ``f``'s gradient with the custom rule: ``eager`` is
    ``jax.grad(f)(*args)``, ``jit`` is ``jax.jit(jax.grad(f))(*args)``; ``ok`` whether it
    worked, else JAX's error class and text and the snippet line (``source``)."""

    mode: Literal["eager", "jit"]
    ok: bool
    error_class: str | None = None
    message: str | None = None
    source: SourceLoc | None = None


class RuleProblem(WireModel):
    """A mistake found in a custom rule, explained.

    ``kind``: ``bwd_structure`` (wrong number/structure of cotangents), ``bwd_shape`` (a
    cotangent of the wrong shape/dtype), ``fwd_not_pair``, ``fwd_output`` (fwd's primal output
    differs from the function's), ``jvp_rule`` (a custom_jvp rule's output rejected),
    ``int_not_nondiff`` (an int argument not in ``nondiff_argnums``), ``jit_failed`` (eager
    grad works, ``jit(grad)`` does not), ``grad_failed`` (another error), ``differs_autodiff``,
    ``differs_fd``, ``jvp_differs``, ``autodiff_failed`` (autodiff of ``.fun`` is not finite or
    raises where the rule gives a value: often why the rule exists). ``severity``: ``error`` (it
    does not work), ``warning`` (a value differs), ``note`` (for information). ``title`` one
    clear sentence; ``explanation`` why and the
    fix; ``error_class``/``error_message`` JAX's real error, kept verbatim; ``source`` the
    snippet line; ``argument`` the key path concerned.
    """

    kind: Literal[
        "bwd_structure",
        "bwd_shape",
        "fwd_not_pair",
        "fwd_output",
        "jvp_rule",
        "int_not_nondiff",
        "jit_failed",
        "grad_failed",
        "differs_autodiff",
        "differs_fd",
        "jvp_differs",
        "autodiff_failed",
    ]
    severity: Literal["error", "warning", "note"]
    title: str
    explanation: str
    error_class: str | None = None
    error_message: str | None = None
    source: SourceLoc | None = None
    argument: str | None = None


class CustomCallRecorded(EventBase):
    """Step 1 for one custom function ``f`` calls: what it received and what its rule sees.

    ``name`` the function's ``__name__``, ``kind``, ``source`` its ``def`` line, ``call_source``
    the snippet line of its first call; ``rule_names`` the rule functions (``fwd``, ``bwd`` or
    ``jvp``) and ``rule_lines`` their ``def`` lines in the snippet; ``call_args`` the leaves it
    received; ``residuals`` what ``fwd`` saved (custom_vjp; empty when fwd failed);
    ``jvp_check`` (custom_jvp) the rule's tangents against autodiff of ``.fun``, with
    ``tangents_in`` the tangents used (a fixed pseudo-random draw).
    """

    type: Literal["custom_call_recorded"] = "custom_call_recorded"
    name: str
    kind: Literal["custom_vjp", "custom_jvp"]
    source: SourceLoc | None = None
    call_source: SourceLoc | None = None
    rule_names: dict[str, str]
    rule_lines: dict[str, int] = {}
    nondiff_argnums: list[int]
    call_args: list[CustomArgView]
    residuals: list[SavedResidual]
    tangents_in: list[ArrayPreview] = []
    jvp_check: list[TangentCheck] = []


class CustomRuleChecked(EventBase):
    """Step 2 for one custom function: ``f``'s gradient with the rule against autodiff without
    it and finite differences, per floating leaf of ``args`` (``arguments``); ``attempts`` the
    eager and jitted gradient; ``problems`` the mistakes found, explained; ``verdict`` ``agrees``
    (every check within tolerance), ``differs`` (a value disagrees) or ``error`` (the gradient
    could not be taken)."""

    type: Literal["custom_rule_checked"] = "custom_rule_checked"
    name: str
    kind: Literal["custom_vjp", "custom_jvp"]
    nondiff_argnums: list[int]
    arguments: list[ArgumentCheck]
    attempts: list[GradientAttempt]
    problems: list[RuleProblem]
    verdict: Literal["agrees", "differs", "error"]


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    CustomCallRecorded,
    CustomRuleChecked,
)
