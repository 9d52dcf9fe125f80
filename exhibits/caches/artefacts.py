"""The caches exhibit's ``--print`` table: ``timeline`` is JSON, one object per jit call
observed: ``{"function": ..., "layer": ..., "differs": [entry names], "cause": ...}``
(``cause``: why the call traced or compiled again, in words, the page's text; ``null`` when it
did no new work or had nothing earlier to compare with). ``NOTES``: a driver
run's note (no jit call observed, or JAX's work the timeline does not show), which
``jaxscope run`` prints on stderr. Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.caches.events import DriverRunSummary, JitCallObserved


def _timeline(events: Sequence[EventBase]) -> str | None:
    calls = [e for e in events if isinstance(e, JitCallObserved)]
    return json.dumps(
        [
            {
                "function": c.function,
                "layer": c.layer,
                "differs": [d.name for d in c.entries if d.differs],
                "cause": c.cause,
            }
            for c in calls
        ]
    )


def NOTES(events: Sequence[EventBase]) -> list[str]:
    """The driver run's note, when it has one: why the timeline is empty or incomplete."""
    return [e.note for e in events if isinstance(e, DriverRunSummary) and e.note]


ARTEFACTS = {"timeline": _timeline}
