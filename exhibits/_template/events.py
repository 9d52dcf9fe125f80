"""The template exhibit's events (copy ``exhibits/_template/`` to start an exhibit:
``docs/adding-an-exhibit.md``).

One event, ``template_avals_read``: the abstract values (avals) of the snippet's arguments, then
those of its outputs, one event each, so that the stepper walks in -> out. Rename the event (its
class and its ``type``) when you make the exhibit yours: every event ``type`` and every wire
model's class name must be unique in the event union.

Imports only pydantic and ``jaxscope.protocol`` (the shared views); ``jaxscope.events`` puts
``EVENTS`` into the event union once the registry lists the exhibit.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import AvalView, EventBase, WireModel


class TemplateLeafAval(WireModel):
    """One leaf of the arguments or outputs: its key path (``args[0]['w']``, ``out['y']``) and
    its aval as JAX traced it."""

    path: str
    aval: AvalView


class TemplateAvalsRead(EventBase):
    """The avals ``jax.make_jaxpr`` traced ``f`` with: ``side="in"`` the arguments' leaves (the
    jaxpr's ``in_avals``, static arguments left out), ``side="out"`` the outputs' leaves (its
    ``out_avals``), in JAX's flattening order."""

    type: Literal["template_avals_read"] = "template_avals_read"
    side: Literal["in", "out"]
    leaves: list[TemplateLeafAval]


# This exhibit's events (checked: every event class defined here must be listed, see
# ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (TemplateAvalsRead,)
