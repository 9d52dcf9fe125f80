"""The transpose exhibit's events: ``linear_jaxpr_staged``, ``transpose_stepped`` (one transpose
rule of the backward pass), ``transpose_call_opened`` (the walk inside a call's body),
``gradient_checked`` (against ``jax.grad``/``jax.vjp`` and finite differences) and
``grad_attempted`` (eager and jitted gradients).

The nan_finder exhibit walks the same backward pass and emits ``linear_jaxpr_staged`` and
``transpose_stepped`` too: it imports them from here (the transpose exhibit owns them; a
dependency one way, no cycle).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal, Self

from jaxscope.exhibit_api import (
    AvalView,
    EventBase,
    JaxprView,
    NestedNumbers,
    RuleView,
    SourceLoc,
    ValueView,
    WireModel,
    without_previews,
)
from pydantic import Field


class CotangentWrite(WireModel):
    """A cotangent a transpose rule sent to a linear variable: ``mode`` set (first write) or
    accumulate (``ad.add_tangents`` with what was there), the contribution and the running sum."""

    var: str
    mode: Literal["set", "accumulate"]
    contribution: ValueView
    running: ValueView


class TransposeStepped(EventBase):
    """One step of the backward pass: the transpose rule of one linear eqn.

    ``step`` counts from 0 in walk order (last eqn first); ``eqn_index`` indexes the linear
    jaxpr; ``primal_primitive`` the primal eqn whose JVP rule emitted this eqn, when known.
    ``rule`` is ``None`` when neither ``ad.fancy_transposes`` nor ``ad.primitive_transposes``
    has an entry for ``primitive``.

    A failing step (the last of a walk whose backward pass raised, as ``jax.grad`` does):
    ``error_class``/``error`` are the exception its transpose rule raised (JAX's
    ``NotImplementedError`` for a primitive with no rule, or what the rule raised, e.g. a
    ``custom_vjp`` ``bwd``'s error) and ``writes`` what it accumulated before raising.
    """

    type: Literal["transpose_stepped"] = "transpose_stepped"
    step: int
    eqn_index: int
    primitive: str
    primal_primitive: str | None = None
    source: SourceLoc | None = None
    rule: RuleView | None = None
    eqn_text: str
    cts_in: list[ValueView]
    args: list[ValueView]
    writes: list[CotangentWrite]
    error_class: str | None = None
    error: str | None = None

    def summarised(self) -> Self:
        """Streamed to the page without its values' previews (details on demand)."""
        return without_previews(self)


class InnerStepView(WireModel):
    """One step of the backward pass inside a call (a ``jit`` body, the branch a ``cond`` took,
    one iteration of a ``scan`` body): as :class:`TransposeStepped` without the values in
    (``step`` counts within that walk; ``eqn_text`` names vars as the body prints them)."""

    step: int
    primitive: str
    primal_primitive: str | None = None
    source: SourceLoc | None = None
    eqn_text: str
    writes: list[CotangentWrite]


class InnerWalkView(WireModel):
    """The backward pass of one call's body: ``iteration`` the scan iteration (index along the
    scanned axis; ``None`` for ``jit``/``cond``), ``steps`` its steps (at most
    ``TransposeCallOpened`` ``max_steps``; ``truncated`` how many more there were)."""

    iteration: int | None = None
    steps: list[InnerStepView]
    truncated: int = 0


class TransposeCallOpened(EventBase):
    """What the transpose rule of a call step (``step``: a ``jit``, ``cond`` or ``scan`` step of the
    walk) runs inside: the same walk over the call's body with the cotangents the step received
    (``transpose_walk.inside``/``walk_scan_body``: the backward pass JAX's
    ``_pjit_transpose_fancy``/``_cond_transpose_fancy`` run on the body, and
    ``_scan_transpose_fancy`` scans over the iterations, last first). ``name``: the jitted
    function's name, or ``branch i`` for a cond. For a scan, ``walks`` holds the first iterations
    walked (at most ``max_iterations``) and ``more_iterations`` how many were not shown. Calls
    inside the body are one step each here."""

    type: Literal["transpose_call_opened"] = "transpose_call_opened"
    step: int
    primitive: str
    name: str | None = None
    walks: list[InnerWalkView]
    more_iterations: int = 0
    max_steps: int = 0
    max_iterations: int = 0

    def summarised(self) -> Self:
        """Streamed to the page without its writes' previews (details on demand)."""
        return without_previews(self)


class OutputLeafView(WireModel):
    """The first-leaf rule applied (``jaxscope.grad_output``): ``f`` (or, in a transform stack,
    the function a ``grad`` chip wraps) returned a pytree whose first leaf is a floating scalar,
    and that leaf is what is differentiated: ``jax.grad(lambda *a: jax.tree.leaves(f(*a))[0])``.
    ``leaves``: how many leaves the output has; ``kind`` its container's type name
    (``tuple``, ``dict``, ``State``); ``structure`` the output with every leaf replaced by its
    aval (cut to 240 characters); ``path`` the first leaf's key path (``[0]``: from
    ``jax.tree_util.tree_flatten_with_path``); ``aval`` its aval (``f32[]``); ``note`` the
    sentence the view shows; ``chip`` the stack position of the ``grad``/``value_and_grad``
    chip it applies to (transform_order only; ``None`` elsewhere)."""

    leaves: int
    kind: str
    structure: str
    path: str
    aval: str
    note: str
    chip: int | None = None


class LinearJaxprStaged(EventBase):
    """The linear jaxpr the backward pass walks (residuals first), with the residual values.
    ``output_leaf``: set when ``f`` returns a pytree and its first leaf (a floating scalar: a
    train step's loss) is what is differentiated (:class:`OutputLeafView`)."""

    type: Literal["linear_jaxpr_staged"] = "linear_jaxpr_staged"
    # A 20,000-residual program: rows past the first go in list ranges (design 0045).
    ranged_lists = ("residuals",)
    jaxpr: JaxprView
    residuals: list[ValueView]
    output_leaf: OutputLeafView | None = None


class FdSample(WireModel):
    """One element of a leaf whose values are not sent where a finite difference was taken:
    ``index`` its position in the leaf, ``gradient`` the walk's value there,
    ``finite_difference`` the central difference in float64 (``None`` at a kink); non-finite
    numbers as ``"nan"``/``"inf"``/``"-inf"``."""

    index: list[int]
    gradient: NestedNumbers
    finite_difference: NestedNumbers


class CustomRuleOnPath(WireModel):
    """A user's ``custom_vjp`` backward rule on a gradient element's path: its function name and
    the line where it returns (``None`` when not defined in the snippet)."""

    name: str
    source: SourceLoc | None = None


class GradientLeaf(WireModel):
    """One leaf of a differentiated argument in :class:`GradientChecked`: ``path`` its key path
    (``args[0]['b1']``: ``args[i]`` then ``jax.tree_util.keystr``), ``aval`` its abstract value,
    and the walk's gradient, ``jax.grad``'s, ``jax.vjp``'s and the finite differences at that
    leaf (nested lists of floats, as in :class:`GradientChecked`).

    ``sent`` false: the leaf is too large for its values to be sent (more than
    ``GradientChecked.max_leaf_values`` elements, or past the event's total): the four value
    fields are ``None`` and the leaf is summarised: ``size`` its elements, ``equal_to_jax``
    whether this leaf of the walk's gradient is bit-identical to ``jax.grad``'s and
    ``jax.vjp``'s, ``max_abs`` the largest finite ``|gradient|``, ``nonfinite`` how many
    elements are NaN/Inf, ``fd_sampled`` how many elements were differenced and
    ``fd_samples`` the first 64 of them (:class:`FdSample`). The summary is set for every
    leaf; ``fd_samples`` only for a leaf not sent.

    The check (:class:`GradientChecked` ``verdict``): ``held_at`` the dtype whose precision the
    leaf's gradient is held to (its own, or a narrower one ``f`` computes in), ``tolerance`` that
    relative tolerance (``jaxscope.finite_diff.gradient_tolerance``), ``checked`` how many of
    its elements were held to their finite difference and ``disagree`` how many of those
    disagree."""

    arg: int
    path: str
    aval: AvalView
    gradient: NestedNumbers
    jax_grad: NestedNumbers
    jax_vjp: NestedNumbers
    finite_difference: NestedNumbers
    size: int = 0
    sent: bool = True
    equal_to_jax: bool | None = None
    max_abs: float | None = None
    nonfinite: int = 0
    fd_sampled: int = 0
    fd_samples: list[FdSample] = []
    held_at: str | None = None
    tolerance: float | None = None
    checked: int = 0
    disagree: int = 0


class FdNotCompared(WireModel):
    """An element :class:`GradientChecked`'s error figures leave out because a gradient there is
    NaN or Inf, or the finite difference is: ``path`` the leaf (as in :class:`GradientLeaf`),
    ``index`` the element's position in it (``[]`` for a scalar), ``gradient`` the walk's value
    (float32 as shown), ``gradient_f64`` the float64 walk's, ``finite_difference`` the central
    difference (``None`` at a kink); non-finite numbers as ``"nan"``/``"inf"``/``"-inf"``.
    ``why``: the reason in words (``a kink: the one-sided differences disagree; the gradient is
    inf``, ``the finite difference is nan (f is not finite near this point)``; empty from older
    servers); ``reason`` the same as a code: ``kink``, ``nonfinite`` (the difference is NaN/Inf),
    ``rounded`` (``f`` rounds the element inside: flat at float64's step, or computing in
    bfloat16/float16), ``unresolved`` (the difference's rounding error is past the tolerance
    there), ``not_sampled`` (an element past the sample whose gradient is NaN/Inf) or
    ``another_function`` (``f`` in float64 is not the function that was differentiated: its
    value at ``args`` differs from the float32 one past rounding, e.g. random bits drawn with
    x64 on; then ``path`` is ``f(*args)``, ``gradient`` f's value and ``gradient_f64`` the
    float64 value, and nothing is compared)."""

    path: str
    index: list[int]
    gradient: NestedNumbers
    gradient_f64: NestedNumbers
    finite_difference: NestedNumbers
    why: str = ""
    reason: Literal[
        "", "kink", "nonfinite", "rounded", "unresolved", "not_sampled", "another_function"
    ] = ""


class FdDisagreement(WireModel):
    """An element whose gradient disagrees with its finite difference (:class:`GradientChecked`
    ``disagreements``): ``path`` and ``index`` as in :class:`FdNotCompared`, ``gradient`` the
    walk's value (exactly its dtype's value), ``gradient_f64`` the float64 walk's (``None`` when
    it was skipped), ``finite_difference`` the central difference (known: no kink); non-finite
    numbers as ``"nan"``/``"inf"``/``"-inf"``. ``kind``: ``nonfinite`` (the gradient is NaN or
    Inf where the difference is finite), ``zero`` (the gradient is 0 where the difference is
    not), ``off`` (past the tolerance); ``allowed`` the largest ``|gradient - finite
    difference|`` the tolerance accepts at this element; ``dtype`` the precision it is held to;
    ``why`` the sentence."""

    path: str
    index: list[int]
    gradient: NestedNumbers
    gradient_f64: NestedNumbers
    finite_difference: NestedNumbers
    kind: Literal["nonfinite", "zero", "off"]
    allowed: float
    dtype: str
    why: str


# A gradient check with at least this many sent values streams its summary (details on demand).
SUMMARY_FROM_VALUES = 4096
# ... unless its whole event is longer than this (``jaxscope.summaries.MAX_STREAMED_LINE_BYTES``,
# the bound on every line an ``on_demand`` run streams, detail answers included): then it is
# streamed whole and its long lists go in list ranges (``GradientChecked.ranged_lists``).
WHOLE_DETAIL_BYTES = 2**20


class GradientChecked(EventBase):
    """The walk's final cotangents beside ``jax.grad``/``jax.vjp`` and central finite
    differences in float64, and the verdict of holding the gradient to them.

    The verdict (what the view and ``jaxscope run`` show first). ``verdict``:

    * ``disagree``: at some element the gradient is NaN or Inf where the finite difference is
      finite, or differs from it by more than the tolerance (a zero gradient where the
      difference is not zero is one of these); ``disagreements`` lists them (the first 64, in
      argument, leaf and element order; ``disagree_count`` all of them), the first is named in
      the headline;
    * ``agree``: every element differenced was held to its difference and is within the
      tolerance (past 512 elements those are a sample, and the headline says so);
    * ``incomplete``: none disagrees, but some elements were left out (``not_compared``: a kink,
      a NaN/Inf difference, an element ``f`` rounds inside, a difference too imprecise there, a
      NaN/Inf gradient past the sample), or nothing could be held at all: never agreement.

    ``headline``: that verdict as one sentence, naming the first disagreeing (or left out)
    element by key path and index with the gradient in its dtype's digits (numpy's printout: a
    float16 0.333251953125 is ``0.3333``) and the finite difference (float64, 6 digits), and,
    when the float64 walk was run, whether it agrees there (then the dtype's rounding, not the
    rule, lost the gradient). ``checked``: the elements held to their difference.

    ``all_zero``: the verdict is ``agree`` or ``incomplete``, at least one element was checked,
    every element of the walk's gradient is exactly 0 and so is every checked finite difference
    (float64): agreement between zeros, which says nothing about the rules. ``f`` does not change
    with these inputs at float64 precision: a vanishing gradient (the product of thousands of
    factors under 1 underflows, or the map converges to a fixed point and forgets its input).
    The headline says so.

    The tolerance. Element ``i`` of a leaf agrees when ``|g_i - fd_i| <= tol * s_i + noise_i``
    with ``s_i = max(|fd_i|, max |fd| over the leaf, 1e-2 * max |fd| over every leaf)`` (a leaf
    whose true gradient is small is held to its own scale: a zero gradient there disagrees), and
    ``noise_i`` the rounding error of the difference (``FiniteDifferences.noise``); an element
    whose ``noise_i`` is past ``tol * s_i`` cannot be resolved and is left out (``unresolved``),
    unless its gradient is NaN/Inf. ``tol`` is ``jaxscope.finite_diff.gradient_tolerance`` of the
    leaf's dtype, or of the narrowest floating dtype ``f`` computes in when that is narrower
    (``GradientLeaf.held_at``): float32 1e-4, float16 1e-2, bfloat16 6.25e-2, float64 1e-6.

    Low-precision inputs (float16, bfloat16). The finite differences are not taken in the
    input's dtype (there ``x + h`` rounds back to ``x`` for any step under its spacing and every
    difference would be 0 or a jump): every floating leaf is widened to float64, exactly (a
    float16 value is a float64 value), and ``f`` is evaluated in float64 under
    ``jax.enable_x64``, the upcast function, at the input's own value. The step is
    ``h = cbrt(eps) * max(1, |x|)`` with ``eps`` the epsilon of the narrowest floating dtype the
    upcast function still computes in (``fd_dtype``): float64 (``h`` about 6e-6) unless ``f``
    casts inside, when the step grows to that dtype's resolution (float32: 4.9e-3; a function
    that still rounds to bfloat16 or float16 inside, e.g. a Flax layer with
    ``dtype=jnp.bfloat16``, cannot be differenced at that precision: its elements are left out as
    ``rounded`` unless ``f`` does not change at all at ``2**-7 * max(1, |x|)``). Where the
    upcast function is flat at ``h`` (the same value bit for bit at ``x - h``, ``x`` and
    ``x + h``), the difference is retried at ``2**-7 * max(1, |x|)``, which is at least one
    spacing of bfloat16 and several of float16 at ``x``: still flat, ``f`` does not depend on
    the element (difference 0); changed by more than a slope flat at ``h`` allows, ``f`` rounds
    the element inside (``rounded``). The gradient itself (in its dtype) is then held at its
    dtype's tolerance (above).

    The values. ``gradient``, ``jax_grad``, ``jax_vjp``, ``finite_difference``: one entry per
    element of ``args``: ``None`` for an argument not differentiated, an array argument as
    nested lists of floats, any other pytree as the list of its leaves in ``jax.tree.leaves``
    order (each nested lists of floats; a dict's leaves in sorted key order); non-finite numbers
    as ``"nan"``/``"inf"``; ``None`` inside ``finite_difference`` at a kink, a rounded element or
    one not sampled. ``leaves``: the same values one differentiated leaf at a time, with its key
    path and aval (what the view shows). ``argnums`` the differentiated positions; ``seed`` the
    output cotangent the walk started from (``1.0`` for a scalar output, as ``jax.grad``; for a
    non-scalar output an all-ones cotangent, i.e. the gradient of ``sum(f)``, and ``jax_grad``
    is then ``jax.grad`` of ``sum(f)``). ``equal_to_jax``: the walk's gradient is bit-identical
    to both ``jax_grad`` and ``jax_vjp``.

    The figures of the rules. ``max_abs_err = max |g64 - fd|`` over the compared elements: the
    checked ones where both the walk's gradient and ``g64`` are finite, with ``g64`` the same
    walk run in float64 (``jax.enable_x64``, on the widened arguments) and ``fd`` the central
    differences; ``max_rel_err = max_abs_err / max |fd|`` (the error relative to the largest
    gradient entry, infinity norm). Both ``None`` when nothing could be compared. They say
    whether JAX's rules are right in float64; the verdict says whether the gradient the user
    gets is right at its precision (a float16 gradient that overflowed to 0 has a tiny
    ``max_abs_err`` and a ``disagree`` verdict). ``compared``: how many elements the figures
    cover; ``not_compared``: the elements left out of the check, each with its ``reason`` (the
    first 64, in leaf order; ``not_compared_count`` all of them).

    Size: a leaf of more than ``max_leaf_values`` elements (or past 16,384 sent in all) is
    ``None`` in ``gradient``/``jax_grad``/``jax_vjp``/``finite_difference`` and summarised in
    ``leaves`` (:class:`GradientLeaf` ``sent``); ``leaves_not_sent`` counts them. ``elements``:
    the differentiated elements in all; ``fd_sampled``: how many of them were differenced
    (``jaxscope.finite_diff`` samples past 512 elements: up to 4 of each leaf, the rest evenly
    over all, fewer for a large program: at least 16; the first 64 elements whose gradient is
    NaN/Inf are differenced too; ``exhibits.transpose.probe.FD_ELEMENTS``);
    ``equal_to_jax`` always covers every element.

    ``float64_walk`` false: the program is large (``program_eqns``, the top-level eqns of
    ``jax.jit(jax.grad(f))``'s jaxpr, over 200), and the float64 walk was not run; the figures
    then compare the float32 walk with the float64 finite differences (float32 rounding
    included), and ``gradient_f64`` is ``None`` in the rows.
    """

    type: Literal["gradient_checked"] = "gradient_checked"
    # A check too large for one line (a jitted GPT stack: 2.4 MB, four copies of 16,384 values)
    # sends its leaves' rows, and each argument's leaves in the per-argument values, in list
    # ranges (design 0045; ``summarised``).
    ranged_lists = ("leaves", "gradient.*", "jax_grad.*", "jax_vjp.*", "finite_difference.*")
    argnums: list[int] = []
    seed: str = "1.0"
    gradient: NestedNumbers
    jax_grad: NestedNumbers
    jax_vjp: NestedNumbers
    equal_to_jax: bool
    finite_difference: NestedNumbers
    max_abs_err: float | None
    max_rel_err: float | None
    leaves: list[GradientLeaf] = []
    compared: int | None = None
    not_compared: list[FdNotCompared] = []
    not_compared_count: int = 0
    elements: int | None = None
    fd_sampled: int | None = None
    leaves_not_sent: int = 0
    max_leaf_values: int | None = None
    float64_walk: bool = True
    program_eqns: int | None = None
    verdict: Literal["agree", "disagree", "incomplete"] | None = None
    headline: str = ""
    checked: int | None = None
    # Left off the wire when false.
    all_zero: bool = Field(
        default=False, exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )
    disagreements: list[FdDisagreement] = []
    disagree_count: int = 0
    fd_dtype: str | None = None
    # For a ``disagree`` verdict: the user's ``custom_vjp`` backward rules that the first
    # disagreeing leaf's cotangent passes through (``internals/rule_blame.py``), where each
    # returns: JAX's own rules are tested, the user's are the first suspects.
    rules_on_path: list[CustomRuleOnPath] = []
    # The walk's steps after the first ``probe.MAX_STEP_EVENTS`` (2,000), which got no
    # ``transpose_stepped`` (the walk itself, and the gradient checked here, are whole). Sent
    # here, not on ``linear_jaxpr_staged`` as jvp/vmap do: that event goes before the walk and
    # the number of steps is known only once it ran. Left off the wire when 0.
    steps_left_out: int = Field(
        default=0, exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )

    def summarised(self) -> Self | None:
        """Streamed to the page with every figure but without the values (details on demand):
        ``gradient``/``jax_grad``/``jax_vjp``/``finite_difference`` ``None`` per argument and
        per sent leaf; None (streamed whole) when they hold fewer than 4,096 numbers, or when
        the whole event, which a detail request would answer, is over 1 MiB
        (:data:`WHOLE_DETAIL_BYTES`): then the runner sends its ``leaves`` and each argument's
        values past their first items in list ranges (``ranged_lists``), each under 1 MiB, and
        the page asks for the leaves' ranges as the table shows them."""
        if sum(leaf.size for leaf in self.leaves if leaf.sent) < SUMMARY_FROM_VALUES:
            return None
        if len(self.model_dump_json()) > WHOLE_DETAIL_BYTES:
            return None
        none = [None for _ in self.gradient] if isinstance(self.gradient, list) else None
        leaves = [
            leaf.model_copy(
                update={"gradient": None, "jax_grad": None, "jax_vjp": None}
                | {"finite_difference": None}
            )
            if leaf.sent
            else leaf
            for leaf in self.leaves
        ]
        return self.model_copy(
            update={"gradient": none, "jax_grad": none, "jax_vjp": none}
            | {"finite_difference": none, "leaves": leaves}
        )


class GradAttempted(EventBase):
    """One way of taking the gradient (``eager`` = ``jax.grad(f, argnums)(*args)``, ``jit`` =
    ``jax.jit(jax.grad(f, argnums), static_argnums).trace(*args)``: traced with abstract
    arguments): whether it worked and, if not, JAX's error (``error_class``, ``message``), the
    deepest snippet line on its traceback, a plain ``explanation`` and the ``fix``."""

    type: Literal["grad_attempted"] = "grad_attempted"
    mode: Literal["eager", "jit"]
    ok: bool
    error_class: str | None = None
    message: str | None = None
    source: SourceLoc | None = None
    explanation: str | None = None
    fix: str | None = None


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
class GradientValuesSent(EventBase):
    """Values of one gradient leaf that :class:`GradientChecked` summarised (``GradientLeaf``
    ``sent`` false: more than 4,096 elements), for a run that prints whole artefacts (the CLI's,
    ``details = "eager"``; issue 33, design 0060): ``jaxscope run transpose --print gradient``
    then gives every element of every leaf, as the page gets a summary's details.

    ``leaf``: the index of the leaf in ``GradientChecked.leaves`` (``path`` its key path, for
    a reader); ``start``/``count``: the elements this event carries, in the leaf's row-major
    order (a leaf of more than :data:`VALUES_PER_EVENT` elements comes in several events, in
    order); ``data``: those elements' bits, little-endian, base64, in ``encoding``: the leaf's
    own dtype for float32 and float64, float32 for float16 and bfloat16 (which it holds
    exactly). The walk's gradient only: ``jax.grad``'s and ``jax.vjp``'s are bit-identical to
    it when ``GradientLeaf.equal_to_jax`` says so."""

    type: Literal["gradient_values_sent"] = "gradient_values_sent"
    leaf: int
    path: str
    start: int
    count: int
    encoding: Literal["float32", "float64"]
    data: str


# The elements of one GradientValuesSent: 1 MiB of float32 (1.4 MB of base64 on the line).
VALUES_PER_EVENT = 2**18


EVENTS: tuple[type[EventBase], ...] = (
    TransposeStepped,
    TransposeCallOpened,
    LinearJaxprStaged,
    GradientChecked,
    GradAttempted,
    GradientValuesSent,
)
