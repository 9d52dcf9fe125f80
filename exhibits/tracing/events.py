"""The tracing exhibit's events: ``eqn_recorded`` (each eqn as JAX's tracer records it) and
``jit_called`` (each call of the "call again" sequence, traced or cached).

``stations`` streams ``eqn_recorded`` too and imports it from here (the tracing exhibit
owns it: a dependency one way, no cycle). ``jaxpr_staged`` is a core event
(``jaxscope.protocol``): most exhibits emit it.

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import AvalView, EventBase, SourceLoc


class EqnRecorded(EventBase):
    """An eqn recorded by JAX's tracer in a user frame, streamed as it is recorded.

    Comes from ``pe.JaxprStackFrame.add_eqn``. ``index`` is the order among the eqns recorded in
    the traced function's own frame (equal to its index in the staged jaxpr); ``in_avals`` and
    ``out_avals`` are the avals going in and out (weak types marked); ``params`` printed values.
    """

    type: Literal["eqn_recorded"] = "eqn_recorded"
    index: int
    primitive: str
    params: dict[str, str]
    in_avals: list[AvalView]
    out_avals: list[AvalView]
    source: SourceLoc | None = None


class JitCalled(EventBase):
    """One call of ``jax.jit(f)`` in the tracing exhibit's call sequence.

    ``traced`` says whether this call traced ``f`` again (a cache miss), read from
    ``jax.monitoring``'s trace-duration event; ``cache_size`` is the jitted function's
    ``_cache_size()`` after the call; ``explanation`` JAX's ``jax_explain_cache_misses`` text
    for this call (empty on a hit); ``arg_avals`` the flattened argument avals.
    """

    type: Literal["jit_called"] = "jit_called"
    call_index: int
    change: Literal["same", "shape", "dtype", "expr"]
    arg_avals: list[AvalView]
    traced: bool
    cache_size: int
    printed: str
    explanation: str


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    EqnRecorded,
    JitCalled,
)
