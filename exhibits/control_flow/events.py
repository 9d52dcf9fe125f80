"""The control_flow exhibit's events: ``carry_checked`` (JAX's type check of a loop carry or of
a ``cond``/``switch``'s branch outputs) and ``control_flow_shown`` (a semantics fact with
the jaxpr that proves it).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import AvalView, EventBase, JaxprView, SourceLoc, WireModel


class CarryLeafView(WireModel):
    """One leaf of a control-flow carry (or of a branch's output) as JAX's check saw it.

    ``path`` is ``jax.tree_util.keystr`` of the leaf's key path in the carry (``.n_pos``,
    ``['w']``, ``[1]``; ``""`` for a carry that is a single array); ``types`` one aval per
    column of :class:`CarryChecked` (``None`` where that side has no such leaf); ``matches``
    ``core.typematch`` of the two compared sides (the predicate JAX's check uses); ``promoted``:
    JAX converted this weak-typed init leaf to the body's output type
    (``loops._promote_weak_typed_input``) and traced the body again."""

    path: str
    types: list[AvalView | None]
    matches: bool
    promoted: bool = False


class CarryChecked(EventBase):
    """JAX's type check of one ``lax.scan`` / ``while_loop`` / ``fori_loop`` carry or of one
    ``cond`` / ``switch``'s branch outputs, observed while ``jax.make_jaxpr(f)`` traced
    (``jaxscope.internals.control_flow``).

    ``api`` is JAX's own label (``scan body``, ``while_loop body``, ``cond``, ``switch``);
    ``primitive`` the jaxpr primitive (``scan``, ``while``, ``cond``); ``fori``: the body is
    ``fori_loop``'s wrapper (its carry is ``(i, your carry)`` for scan, ``(i, upper, your
    carry)`` for while). ``columns`` names the compared sides: ``carry in``/``carry out`` for a
    loop (preceded by ``init`` when JAX promoted a weak-typed init leaf), ``true_fun``/
    ``false_fun`` for cond, ``branch 0``, ``branch1``... for switch. ``leaves`` row by row,
    ``entry``/``exit`` the short types (``f32[]``) of the first/last column. ``ok``/
    ``error_class``/``message``: JAX's verdict (its exception text verbatim); ``leaf_path``
    the first leaf that differs (``None`` when JAX accepted). ``source`` the snippet line of
    the call, ``bodies`` the user's functions (name and definition line). ``eqn_index``: the
    top-level eqn of ``f``'s jaxpr holding the staged primitive; ``eqn_carry_in``/
    ``eqn_carry_out`` the carry types in that eqn's params (after JAX moved loop-invariant
    carries to consts); ``branch_out`` each branch's output types in ``branches`` order."""

    type: Literal["carry_checked"] = "carry_checked"
    index: int
    primitive: str
    api: str
    fori: bool = False
    source: SourceLoc | None = None
    bodies: list[SourceLoc] = []
    columns: list[str]
    leaves: list[CarryLeafView]
    trees: list[str]
    entry: list[str]
    exit: list[str]
    leaf_paths: list[str]
    ok: bool
    error_class: str | None = None
    message: str | None = None
    leaf_path: str | None = None
    eqn_index: int | None = None
    eqn_carry_in: list[str] = []
    eqn_carry_out: list[str] = []
    branch_out: list[list[str]] = []
    length: int | None = None


class ControlFlowShown(EventBase):
    """One semantics fact shown with the jaxpr that proves it (``cond`` traces both branches,
    ``cond`` under ``vmap`` becomes ``select_n``, static ``fori_loop`` becomes ``scan``, ...).

    ``topic`` a stable id; ``claim`` the sentence; ``holds`` whether the jaxpr shows it (read
    off the jaxpr's primitives, ``primitives``); ``code`` the small function it was computed on
    (``on_user_code``: the user's own ``f``); ``jaxpr`` ``make_jaxpr`` of it; ``error_class``/
    ``message`` JAX's error where the claim is a refusal (``grad`` through ``while``);
    ``figures`` numbers the claim rests on (HLO op counts of ``jit(...).lower(...).compile()
    .as_text()``, a gradient value)."""

    type: Literal["control_flow_shown"] = "control_flow_shown"
    topic: str
    claim: str
    holds: bool
    code: str = ""
    on_user_code: bool = False
    jaxpr: JaxprView | None = None
    primitives: list[str] = []
    error_class: str | None = None
    message: str | None = None
    figures: dict[str, float] = {}


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    CarryChecked,
    ControlFlowShown,
)
