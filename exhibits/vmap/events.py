"""The vmap exhibit's events: ``vmap_inputs_mapped`` (how ``jax.vmap`` maps each argument leaf),
``batch_rule_applied`` (JAX's batching rule on one eqn) and ``batched_jaxpr_staged`` (the
batched jaxpr against ``jax.vmap``).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import (
    ArrayPreview,
    AvalView,
    EventBase,
    JaxprView,
    RuleView,
    SourceLoc,
    WireModel,
)
from pydantic import Field


class MappedInput(WireModel):
    """One leaf of the positional arguments as ``jax.vmap`` sees it: ``path`` (``args[0]``,
    ``args[1]['w']``), ``bdim`` its mapped axis (``None`` = not mapped; negative ``in_axes``
    resolved), ``aval`` its full (batched) aval and ``example_aval`` the per-example aval (the
    mapped axis removed), read off the ``BatchTracer`` vmap made of it. ``static``: a static
    argument (``static_argnums``), closed over, never traced."""

    path: str
    bdim: int | None = None
    aval: AvalView | None = None
    example_aval: AvalView | None = None
    static: bool = False


class VmapInputsMapped(EventBase):
    """How ``jax.vmap(f, in_axes, out_axes)`` maps the snippet's ``args``: the axes as given
    (Python expressions), the mapped size, and each argument leaf (:class:`MappedInput`).
    ``axis_size`` ``None`` (and no ``inputs``): ``jax.vmap`` rejected the axes or the arguments
    before mapping anything, and the run fails next with its error; the axes are still the
    ones the run tried."""

    type: Literal["vmap_inputs_mapped"] = "vmap_inputs_mapped"
    in_axes: str
    out_axes: str
    axis_size: int | None
    inputs: list[MappedInput]


class BatchRuleApplied(EventBase):
    """JAX's batching rule (``batching.fancy_primitive_batchers[primitive]``) ran on one eqn of
    the unbatched (per-example) jaxpr, inside ``jax.vmap``'s ``BatchTrace``.

    ``index`` is the eqn's index in the per-example jaxpr (:class:`JaxprStaged`); ``in_vars`` /
    ``out_vars`` its var names there (``None`` for a literal). ``in_bdims``/``out_bdims``: the
    batch dim of each value (``None`` = not mapped) as ``BatchTracer.batch_dim`` held it.
    ``example_in_avals``/``example_out_avals``: the per-example avals (the eqn's own);
    ``in_avals``/``out_avals``: the batched values' avals (the batch axis at its bdim).
    ``mechanism``: ``rule`` = the rule ran; ``not_mapped`` = no input was mapped, so
    ``BatchTrace.process_primitive`` bound the eqn unbatched and no rule ran; ``failed`` = JAX
    raised on this eqn (e.g. no batching rule and a mapped input): the run's last step, with no
    outputs, after the steps that succeeded (whose ``emitted`` is then empty: no batched jaxpr
    was staged to attribute eqns in). ``emitted``: JAX's
    printout of each eqn this step added to the batched jaxpr (:class:`BatchedJaxprStaged`'s
    names), ``batched_eqn_indices`` their indices there; ``moves`` the subset that moves or
    broadcasts an axis (``transpose``, ``broadcast_in_dim``, ``reshape``, ...) rather than
    computing the eqn itself."""

    type: Literal["batch_rule_applied"] = "batch_rule_applied"
    index: int
    primitive: str
    source: SourceLoc | None = None
    rule: RuleView | None = None
    mechanism: Literal["rule", "not_mapped", "failed"] = "rule"
    note: str | None = None
    in_vars: list[str | None] = []
    out_vars: list[str] = []
    in_bdims: list[int | None]
    out_bdims: list[int | None]
    example_in_avals: list[AvalView] = []
    example_out_avals: list[AvalView] = []
    in_avals: list[AvalView]
    out_avals: list[AvalView]
    emitted: list[str] = []
    batched_eqn_indices: list[int] = []
    moves: list[str] = []


class BatchedJaxprStaged(EventBase):
    """The batched jaxpr: ``jaxpr.text`` is ``str(jax.make_jaxpr(jax.vmap(f, in_axes,
    out_axes), static_argnums)(*args))``; ``outputs`` are ``jax.vmap(f, in_axes,
    out_axes)(*args)``'s leaves and ``matches_jax_vmap`` says the step-by-step interpretation
    computed the same values (bit-identical, or floating leaves within their dtype's tolerance,
    ``jaxscope.finite_diff.tolerance``: the interpretation runs jitted, ``jax.vmap`` op by op);
    ``interpreted_text_equal`` that its jaxpr prints identically.
    ``result_bdims``: each output leaf's batch dim before vmap moved it to ``out_axes``;
    ``output_moves`` the eqns that move did add. ``steps_left_out``: the per-example eqns after
    the first ``batching_steps.MAX_STEPS`` that got no ``batch_rule_applied`` (the step-by-step
    capture stops there; both jaxprs are whole); left off the wire when 0."""

    type: Literal["batched_jaxpr_staged"] = "batched_jaxpr_staged"
    in_axes: str
    out_axes: str
    jaxpr: JaxprView
    outputs: list[ArrayPreview]
    matches_jax_vmap: bool
    interpreted_text_equal: bool = False
    result_bdims: list[int | None] = []
    output_moves: list[str] = []
    steps_left_out: int = Field(
        default=0, exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    VmapInputsMapped,
    BatchRuleApplied,
    BatchedJaxprStaged,
)
