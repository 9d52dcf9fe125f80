"""The transform_order exhibit's event: ``transform_stack_evaluated`` (one stack of transforms:
accepted or not, its jaxpr, value, cost and the tracers that reached ``f``).

``TransformName`` (the chips) and the ``stack`` option are in ``options.py``.

It imports only pydantic, ``jaxscope.protocol`` (the core views) and the transpose exhibit's
``OutputLeafView`` (the first-leaf note, defined once there); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import ArrayPreview, EventBase, JaxprView, SourceLoc, WireModel
from pydantic import Field

from exhibits.transpose.events import OutputLeafView

# What a node of the tracer nest is to the one above it (TraceNodeView.role).
TraceRole = Literal["argument", "primal", "tangent", "val"]


class TraceNodeView(WireModel):
    """One value in the nest of tracers that reached the user's ``f`` (transform_order exhibit).

    ``depth`` 0 is the argument ``f`` received; a node's children (``depth + 1``) are the values
    its tracer wraps: ``primal``/``tangent`` of a ``JVPTracer``/``LinearizeTracer``, ``val`` of a
    ``BatchTracer``. ``tracer`` is ``type(value).__name__``; ``trace`` the tracer's trace class
    (``BatchTrace``, ``JVPTrace``, ``LinearizeTrace``, ``DynamicJaxprTrace``; ``None`` for a
    concrete array); ``aval`` the short aval (``f32[3]``) the value has at this level;
    ``batch_dim`` a ``BatchTracer``'s batch dim of its ``val``; ``transform`` the chip that
    creates this kind of trace, in words."""

    depth: int
    role: TraceRole
    tracer: str
    trace: str | None = None
    aval: str
    batch_dim: int | None = None
    transform: str | None = None


class ArgTraceView(WireModel):
    """The nest of tracers one argument leaf of ``f`` carried on ``f``'s first call (``path``:
    ``jax.tree_util.keystr`` of the leaf in the positional arguments, its leading ``[i]``
    replaced by the parameter's name where ``f`` has one, e.g. ``params['w']``), nodes in
    depth-first order (parents before children)."""

    path: str
    nodes: list[TraceNodeView]


class TransformStackEvaluated(EventBase):
    """One stack of transforms (outermost first) applied to a function: whether JAX accepted it,
    its jaxpr (``jax.make_jaxpr`` of the composed function), the value on the example input, or
    JAX's error (class, text, user line) and a plain explanation.

    ``group``: ``user`` for the user's stack (emitted first), else the built-in comparison it
    belongs to (``per_example``, ``jacobian``, ``model``). ``code`` is the Python expression
    evaluated. ``traces``: the tracers that reached the function, per argument leaf (the first
    8; ``traces_left_out`` counts the leaves after them).
    ``eqn_count`` counts the jaxpr's eqns, inner jaxprs included; ``flops`` is
    ``jax.jit(g).lower(...).compile().cost_analysis()["flops"]``; ``time_ms`` the median wall
    time of a warm call of the jitted function (``block_until_ready``). ``check``: what the
    result was compared with (built-in comparisons), ``check_ok`` whether it matched.
    ``output_leaf``: one entry per ``grad``/``value_and_grad`` chip whose function returned a
    pytree whose first leaf is a floating scalar (a train step's loss), which is what that chip
    differentiated (``jaxscope.grad_output``; ``OutputLeafView.chip`` its stack position)."""

    type: Literal["transform_stack_evaluated"] = "transform_stack_evaluated"
    stack: list[str]
    label: str
    group: str = "user"
    code: str = ""
    in_axes: str | None = None
    ok: bool
    jaxpr: JaxprView | None = None
    result: list[ArrayPreview] = []
    error_class: str | None = None
    message: str | None = None
    source: SourceLoc | None = None
    explanation: str | None = None
    fix: str | None = None
    traces: list[ArgTraceView] = []
    # True when the user's f is itself ``jax.jit(...)``: ``traces`` are what reached its jit
    # call; jit traces f's Python body with DynamicJaxprTracers only. Off the wire when False.
    traces_at_jit: bool = Field(
        default=False, exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )
    # The argument leaves after the first ``len(traces)`` (``MAX_LEAVES``) that ``traces``
    # leaves out (a model's parameters). Off the wire when 0.
    traces_left_out: int = Field(
        default=0, exclude_if=lambda v: not v, json_schema_extra={"x-wire-optional": True}
    )
    eqn_count: int | None = None
    flops: float | None = None
    time_ms: float | None = None
    check: str | None = None
    check_ok: bool | None = None
    output_leaf: list[OutputLeafView] = []


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (TransformStackEvaluated,)
