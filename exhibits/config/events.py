"""The config exhibit's events: ``config_options_listed`` (every ``jax.config`` option) and
``config_retrace_checked`` (one option flipped around an already-traced ``jax.jit``).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, JaxprView, WireModel


class ConfigOptionView(WireModel):
    """One ``jax.config`` option: current value (printed), whether a context manager can scope
    it, whether it is part of the tracing context (changing it forces a retrace), its help.
    ``value_json``: the value as JSON text when it is a bool, int, finite float, str or None
    (``null`` for None), else ``None`` (then only the ``repr`` in ``value`` stands for it)."""

    name: str
    value: str
    value_json: str | None = None
    scoped: bool
    trace_context: bool
    help: str = ""
    kind: str = ""
    option_type: str = ""


class ConfigOptionsListed(EventBase):
    """Every ``jax.config`` option (the config exhibit), sorted by name; ``trace_context_names``
    is ``jax._src.config.trace_context_names()`` (config options and context managers)."""

    type: Literal["config_options_listed"] = "config_options_listed"
    options: list[ConfigOptionView]
    trace_context_names: list[str] = []


class ConfigRetraceChecked(EventBase):
    """The config exhibit's experiment: one option flipped (``with option(value):``) around a
    call of an already-traced ``jax.jit(fun)``; ``traces`` counts how often ``fun``'s Python body
    ran (1 before the flip), ``retraced`` whether the flipped call traced it again; ``jaxpr`` the
    jaxpr traced under the flipped option."""

    type: Literal["config_retrace_checked"] = "config_retrace_checked"
    option: str
    value: str
    trace_context: bool
    retraced: bool
    traces: int
    fun_name: str
    jaxpr: JaxprView | None = None


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    ConfigOptionsListed,
    ConfigRetraceChecked,
)
