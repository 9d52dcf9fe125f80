"""The template exhibit's ``--print`` table (``jaxscope run ID FILE --print avals``): one line per
leaf, ``args[0]['w']: f32[3,2]``, a weakly typed one with JAX's ``~`` (``args[2]: ~f32[]``).
Imports only the protocol and this exhibit's events."""

from __future__ import annotations

from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from .events import TemplateAvalsRead


def _avals(events: Sequence[EventBase]) -> str | None:
    read = [e for e in events if isinstance(e, TemplateAvalsRead)]
    if not read:
        return None
    return "\n".join(
        f"{leaf.path}: {'~' if leaf.aval.weak_type else ''}{leaf.aval.short}"
        for e in read
        for leaf in e.leaves
    )


ARTEFACTS = {"avals": _avals}
