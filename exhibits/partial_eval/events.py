"""The partial_eval exhibit's events: ``jaxpr_split`` (the JVP jaxpr split into known and
unknown jaxprs and their residuals), ``remat_policy_measured`` (one
``jax.checkpoint`` policy's saved residuals, memory and time) and
``remat_unavailable`` (why the remat table could not be computed).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import AvalView, EventBase, JaxprView, SourceLoc, WireModel


class ResidualView(WireModel):
    """A residual: a value the known (forward) jaxpr hands to the unknown (linear) one, or a
    value ``jax.checkpoint`` saves for the backward pass.

    ``aval``; ``source`` the user line of the eqn that produced it (``None`` for an input);
    ``description`` what produced it (``output of sin``, ``the argument primal args[0]``; for
    remat JAX's own text from ``saved_residuals``); ``bytes`` its size (``float0``: 0);
    ``known_eqn`` the index of the producing eqn in the known jaxpr (split only).
    """

    aval: AvalView
    source: SourceLoc | None = None
    description: str
    bytes: int = 0
    known_eqn: int | None = None


class JaxprSplit(EventBase):
    """``pe.partial_eval_jaxpr_nounits`` split the JVP jaxpr ``jvp`` (inputs: ``n_primals``
    primal leaves, then as many tangent leaves): ``known_inputs`` the flags used (one per input,
    ``input_labels``/``input_avals`` naming each), the known and unknown jaxprs,
    ``out_unknowns`` (one per JVP output), and the residuals in order (the known jaxpr's last
    outvars, the unknown jaxpr's first invars). ``split_calls``: indices in ``jvp.eqns`` of the
    call-like eqns (``jit``, ``scan``, ``cond``, ...) whose own partial-eval rule split them, one
    part in each jaxpr; ``dropped``: ``len(jvp.eqns) + len(split_calls) - len(known.eqns) -
    len(unknown.eqns)``, the JVP eqns in neither jaxpr (unknown eqns whose results reach no
    output: the partial evaluator stages only what the outputs need)."""

    type: Literal["jaxpr_split"] = "jaxpr_split"
    # A 20,000-residual program: rows past the first go in list ranges (design 0045).
    ranged_lists = ("residuals",)
    input_labels: list[str]
    input_avals: list[AvalView]
    known_inputs: list[bool]
    n_primals: int
    jvp: JaxprView
    known: JaxprView
    unknown: JaxprView
    out_unknowns: list[bool]
    residuals: list[ResidualView]
    split_calls: list[int] = []
    dropped: int = 0


class RematPolicyMeasured(EventBase):
    """``jax.checkpoint(f, policy=...)`` under ``jax.grad`` (w.r.t. the floating-point leaves):
    ``policy`` the Python expression (``no checkpoint`` for plain ``f``), ``aliases`` other
    names of the same policy in ``jax.checkpoint_policies``; ``saved`` as
    ``print_saved_residuals`` reports them, their total bytes, the compiled ``memory_analysis``
    temp bytes (``None``: not reported), the median step time in milliseconds of the compiled
    grad over ``repeats`` calls on the worker's device, and ``grad_max_abs_diff`` the largest
    difference of its gradient to the un-checkpointed one (NaNs at the same places count as
    equal; ``None``: the two disagree on where the gradient is NaN or Inf). ``grad_of`` says what is
    differentiated: ``f`` (a scalar output) or ``sum of f's outputs`` (any other output).

    ``not_measured``: ``None`` when the row was compiled and measured. Otherwise the row was not
    compiled (a program too large to compile once per policy within the run's time) and this is
    why, in words the view shows: ``saved`` and ``residual_bytes`` are still JAX's (partial
    evaluation, no compile), while ``temp_bytes``, ``step_ms`` and ``grad_max_abs_diff`` are
    ``None`` and ``repeats`` is 0 (not measured, not "not reported")."""

    type: Literal["remat_policy_measured"] = "remat_policy_measured"
    index: int
    policy: str
    aliases: list[str] = []
    saved: list[ResidualView]
    residual_bytes: int
    temp_bytes: int | None
    step_ms: float | None
    repeats: int
    device: str
    grad_of: str
    grad_max_abs_diff: float | None
    not_measured: str | None = None


class RematUnavailable(EventBase):
    """The remat table could not be computed: ``jax.grad`` (reverse mode, which every row
    needs) raised, e.g. a ``lax.while_loop`` with a traced bound has a JVP but no transpose.
    ``error_class``/``message``: JAX's (or the user's) exception class and text;
    ``explanation``: why, in plain words. The split above it stays valid (forward mode)."""

    type: Literal["remat_unavailable"] = "remat_unavailable"
    error_class: str
    message: str
    explanation: str
    # ``too_large``: not attempted, ``f`` is too big to compile once per policy within the run's
    # time (``error_class``/``message`` then say how big); ``grad_fails``: as above.
    reason: Literal["grad_fails", "too_large"] = "grad_fails"


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    JaxprSplit,
    RematPolicyMeasured,
    RematUnavailable,
)
