"""The jvp exhibit's events: ``jvp_rule_applied`` (one primal eqn through ``ad.JVPTrace``) and
``jvp_jaxpr_staged`` (the whole JVP jaxpr against ``jax.jvp``).

The rule and value views they carry (``RuleView``, ``ValueView``) are shared with the
transpose, nan_finder and vmap exhibits, so they stay in ``jaxscope.protocol``.

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal, Self

from jaxscope.exhibit_api import (
    ArrayPreview,
    EventBase,
    JaxprView,
    RuleView,
    SourceLoc,
    ValueView,
    without_previews,
)
from pydantic import Field

# What JAX did with a primal eqn under JVPTrace (JvpRuleApplied.mechanism).
JvpMechanism = Literal["rule", "zero_tangents", "custom_jvp", "custom_vjp"]


class JvpRuleApplied(EventBase):
    """One primal eqn went through ``ad.JVPTrace`` (one step of the jvp exhibit).

    ``index`` is the primal eqn's index in the staged jaxpr (:class:`JaxprStaged`); ``source``
    its user line. ``mechanism`` says what JAX did with it: ``rule`` = the JVP rule
    ``ad.primitive_jvps[primitive]`` ran (``rule`` says which, with its registration file:line);
    ``zero_tangents`` = every tangent in was a symbolic zero (``ad.Zero``), so
    ``JVPTrace.process_primitive`` bound the primal eqn alone and no rule ran; ``custom_jvp`` /
    ``custom_vjp`` = the function's own rule ran (``JVPTrace.process_custom_jvp_call`` /
    ``process_custom_vjp_call``; ``rule`` names the function). ``note`` explains a special case
    (an eqn with an inner jaxpr is one step with its own rule). ``tangent_eqns`` is JAX's printout
    of each eqn this step added to the JVP jaxpr (names as in :class:`JvpJaxprStaged`'s text,
    the primal recomputation included), ``jvp_eqn_indices`` their indices there (empty when the
    attribution is not exact). Values are at the user's ``args`` with the exhibit's tangents;
    primal values carry the primal jaxpr's var names, tangents the JVP jaxpr's.
    """

    type: Literal["jvp_rule_applied"] = "jvp_rule_applied"
    index: int
    primitive: str
    source: SourceLoc | None = None
    rule: RuleView | None = None
    mechanism: JvpMechanism = "rule"
    note: str | None = None
    primals_in: list[ValueView]
    tangents_in: list[ValueView]
    tangent_eqns: list[str]
    jvp_eqn_indices: list[int] = []
    primals_out: list[ValueView]
    tangents_out: list[ValueView]

    def summarised(self) -> Self:
        """Streamed to the page without its values' previews (details on demand)."""
        return without_previews(self)


class JvpJaxprStaged(EventBase):
    """The whole JVP jaxpr: ``jaxpr.text`` is ``str(jax.make_jaxpr(lambda primals, tangents:
    jax.jvp(f_closed, primals, tangents))(primals, tangents))`` (``expression``; ``f_closed`` is
    ``f`` with static and keyword arguments closed over, the dynamic positional arguments are the
    primals). ``eqn_origin[i]`` is the primal eqn index that JVP eqn ``i`` came from (``None``:
    none, e.g. zeros instantiated for the outputs); ``attributed`` is true when that attribution
    is exact (the eqn-by-eqn interpretation printed the very same jaxpr). ``tangents_in`` the
    tangents used (key paths ``tangents[0]['w1']``); ``primals_out``/``tangents_out`` the JVP
    jaxpr evaluated at ``args``; ``jax_primals_out``/``jax_tangents_out`` what
    ``jax.jvp(f_closed, primals, tangents)`` returns, and ``max_abs_diff`` the largest absolute
    difference between the two (``matches_jax_jvp``: within rtol 1e-5, atol 1e-6).
    ``steps_left_out``: the primal eqns after the first ``jvp_steps.MAX_STEPS`` that got no
    ``jvp_rule_applied`` (the step-by-step capture stops there; both jaxprs are whole); left off
    the wire when 0."""

    type: Literal["jvp_jaxpr_staged"] = "jvp_jaxpr_staged"
    jaxpr: JaxprView
    expression: str = ""
    eqn_origin: list[int | None]
    attributed: bool = False
    tangents_in: list[ArrayPreview]
    primals_out: list[ArrayPreview]
    tangents_out: list[ArrayPreview]
    jax_primals_out: list[ArrayPreview] = []
    jax_tangents_out: list[ArrayPreview] = []
    matches_jax_jvp: bool
    max_abs_diff: float | None
    steps_left_out: int = Field(
        default=0, exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    JvpRuleApplied,
    JvpJaxprStaged,
)
