"""The nan_finder exhibit's event: ``nonfinite_found`` (the first backward-pass step whose
cotangent became NaN or Inf, the values located, the double-``where`` cure).

It also emits the transpose exhibit's ``linear_jaxpr_staged`` and ``transpose_stepped``
(defined and listed in ``exhibits/transpose/events.py``: an event belongs to one module).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, NestedNumbers, SourceLoc, ValueView, WireModel


class MarkedValue(WireModel):
    """A value at the NaN step with its NaN/Inf elements located (nan_finder).

    ``label`` says what it is (``cotangent arriving at e``, ``residual a``, ``cotangent sent to
    d``); ``value`` the value itself; ``numbers`` its elements as nested lists (NaN/Inf written
    ``"nan"``/``"inf"``/``"-inf"``) when it has at most 64 elements, else ``None``;
    ``nonfinite_at`` the flat (C-order) indices of its first 64 non-finite elements;
    ``nonfinite_count`` how many elements are NaN or Inf in all.
    """

    label: str
    value: ValueView
    numbers: NestedNumbers = None
    nonfinite_at: list[int] = []
    nonfinite_count: int = 0


class CureView(WireModel):
    """The double-``where`` rewrite of the user's code at the NaN step (nan_finder).

    ``guarded`` the functions whose argument gets the inner ``where`` (``sqrt``, ``log``, ``/``);
    ``start_line`` the 1-based snippet line where ``before`` (the original lines) starts;
    ``after`` their replacement, ``changed`` 0-based indices of its new or changed lines;
    ``form`` ``two_lines`` (a ``safe_x = where(...)`` line inserted) or ``inline``;
    ``source`` the whole rewritten snippet; ``verified`` whether ``jax.grad`` of the rewritten
    snippet at the same ``args`` is finite everywhere (``None``: could not be checked, see
    ``verify_error``), ``cured_gradient`` that gradient (one entry per element of ``args``).
    """

    pattern: Literal["double_where"] = "double_where"
    guarded: list[str]
    explanation: str
    start_line: int
    before: str
    after: str
    changed: list[int]
    form: Literal["two_lines", "inline"]
    source: str
    verified: bool | None = None
    verify_error: str | None = None
    cured_gradient: NestedNumbers = None


class EnclosingCall(WireModel):
    """A call-like step of the backward pass the NaN finder descended into (``jit``, and
    ``cond``'s taken branch — ``name`` is then ``branch <index>``: its transpose is a backward
    pass over its own jaxpr, which JAX itself re-runs de-optimised under
    ``jax_debug_nans``; ``scan``: the body's backward pass per iteration, as ``scan``'s transpose
    runs it; ``remat2``, a ``jax.checkpoint``: its body, recomputed and transposed as
    ``remat_transpose`` does): ``step`` is its step in the walk it belongs to, ``primitive`` its
    primitive, ``name`` the called function's name (the eqn's ``name`` param; the checkpointed
    function's for ``remat2``), ``source`` the
    user line of the call; for a ``scan``, ``iteration`` the (0-based, forward-order) iteration
    whose body's backward pass went bad first (``scan``'s transpose walks the iterations last
    first)."""

    step: int
    primitive: str
    name: str | None = None
    source: SourceLoc | None = None
    iteration: int | None = None
    # scan only: ``reverse`` as the scan ran (then its transpose walks index 0 first), and the
    # first iteration, in the order the forward pass ran, whose extensive residuals (values and
    # derivative factors the forward pass saved) hold NaN/Inf (``None``: none do). Iterations are
    # indices along the scanned axis.
    reverse: bool = False
    forward_nonfinite_iteration: int | None = None


class NonfiniteFound(EventBase):
    """The first backward-pass step whose cotangent became NaN or Inf (``found`` false: none).

    ``step``/``eqn_index``/``eqn_text``/``primitive`` name the linear eqn (as in
    :class:`TransposeStepped`), ``primal_primitive`` the primal eqn whose JVP emitted it and
    ``source`` its user line; ``kind`` ``nan`` when a NaN was written, else ``inf``;
    ``values_in`` the cotangent arriving and the residuals the rule read, ``values_out`` the
    cotangents it sent (contributions); ``forward_value`` the primal eqn's output at ``args`` and
    ``forward_nonfinite`` whether it was already NaN/Inf (``None``: not known);
    ``debug_nans`` what ``jax.grad(f)(*args)`` raises under ``jax_debug_nans`` (JAX's error class
    and text, ``None`` when it raises nothing); ``gradient`` ``jax.grad``'s result (one entry per
    element of ``args``, ``None`` for arguments not differentiated); ``steps_walked`` the steps
    emitted; ``cure`` the double-``where`` rewrite where it applies, else ``no_cure`` says why.
    ``inside``: when the first bad step is a ``jit``, ``cond``, ``scan`` or ``remat2`` call, the
    finder walks that call's body the same way (recursively), outermost call first; then ``step``
    is still the top-level step (the one the stepper shows), ``inner_step`` the step in the
    innermost body's walk, and
    ``eqn_index``/``eqn_text``/``primitive``/``primal_primitive``/``source``/values/``kind``
    name that innermost step (``eqn_index`` into the body's jaxpr).
    """

    type: Literal["nonfinite_found"] = "nonfinite_found"
    found: bool
    kind: Literal["nan", "inf"] | None = None
    step: int | None = None
    eqn_index: int | None = None
    eqn_text: str | None = None
    primitive: str | None = None
    primal_primitive: str | None = None
    source: SourceLoc | None = None
    values_in: list[MarkedValue] = []
    values_out: list[MarkedValue] = []
    forward_value: MarkedValue | None = None
    forward_nonfinite: bool | None = None
    debug_nans: str | None = None
    gradient: NestedNumbers = None
    steps_walked: int = 0
    cure: CureView | None = None
    no_cure: str | None = None
    inside: list[EnclosingCall] = []
    inner_step: int | None = None
    # The differentiated arguments whose values already hold a NaN or an Inf (``args[i]`` plus
    # the leaf's key path), with how many elements: then the bad cotangent came in with them.
    inputs_nonfinite: list[str] = []
    # Why the finder did not walk inside the bad step's call (a scan too long to walk per
    # iteration, or the walk of its body failed in jaxscope's machinery); ``None`` when it did,
    # or the step is no call.
    not_descended: str | None = None
    # The output cotangent the walk started from, as :class:`GradientChecked`'s ``seed``: "1.0"
    # (a scalar output, as ``jax.grad``), or "ones(f32[3]): ..." for a non-scalar output (the
    # gradient of ``sum(f)``; ``gradient`` is then ``jax.vjp`` with that cotangent).
    seed: str = "1.0"
    # Whether ``f``'s own output (the forward pass's result) holds a NaN or an Inf (``None``:
    # not known): then a non-finite forward value may be what f returns, not a discarded one.
    output_nonfinite: bool | None = None
    # For an Inf-only finding: what the same gradient raises under ``jax_debug_infs`` (JAX's
    # class and first line; ``None`` when nothing, or not asked).
    debug_infs: str | None = None
    # When the bad step has no user line (inside a library function's body), ``source`` is the
    # line of the innermost call that has one (where the user called the library) and this
    # names that call (``corrcoef``, ``norm``); ``None`` when the step has its own user line.
    library_call: str | None = None
    # When the bad step is a ``custom_lin`` (a custom_vjp's backward rule): the rule's name,
    # and the first eqn of its trace with a NaN/Inf output (``bwd_primitive`` at
    # ``bwd_source``), run on the step's residuals and cotangent; the landing goes there.
    bwd_name: str | None = None
    bwd_primitive: str | None = None
    bwd_source: SourceLoc | None = None


class ForwardEqnView(WireModel):
    """A top-level eqn of ``f``'s forward pass: its index in ``jax.make_jaxpr(f)``'s jaxpr, its
    primitive, its user line, JAX's text of it (a call as its primitive and name, ``jit
    _where``) and ``kind`` (``nan``/``inf``) of the non-finite values it wrote or read."""

    index: int
    primitive: str
    source: SourceLoc | None = None
    text: str
    kind: Literal["nan", "inf"]


class ForwardNonfiniteHidden(EventBase):
    """A NaN or an Inf made in ``f``'s forward pass that ``f``'s outputs do not show
    (``jaxscope.internals.hidden_nonfinite``): ``origin`` the first top-level eqn that wrote one
    from finite inputs (``count`` non-finite elements), ``hider`` the first later eqn that read
    one and wrote only finite values (a ``where``/``select_n``, a multiply by 0; ``None``: no
    eqn read it). The gradient of such code is NaN wherever the hidden branch's derivative is
    infinite: the double-``where`` keeps the NaN from being made at all."""

    type: Literal["forward_nonfinite_hidden"] = "forward_nonfinite_hidden"
    origin: ForwardEqnView
    hider: ForwardEqnView | None = None
    count: int


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (NonfiniteFound, ForwardNonfiniteHidden)
