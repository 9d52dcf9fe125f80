"""The caches exhibit's ``--print`` table: ``timeline`` is JSON, one object per jit call
observed: ``{"function": ..., "layer": ..., "differs": [entry names]}``. Imports only the
protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventBase

from exhibits.caches.events import JitCallObserved


def _timeline(events: Sequence[EventBase]) -> str | None:
    calls = [e for e in events if isinstance(e, JitCallObserved)]
    return json.dumps(
        [
            {
                "function": c.function,
                "layer": c.layer,
                "differs": [d.name for d in c.entries if d.differs],
            }
            for c in calls
        ]
    )


ARTEFACTS = {"timeline": _timeline}
