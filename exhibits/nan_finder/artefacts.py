"""The nan_finder exhibit's ``--print`` table: ``first_nan`` is JSON ``{"primitive": ...,
"line": ...}`` for the first backward-pass step whose cotangent became NaN or Inf (``primitive``
the primal primitive whose derivative produced it, e.g. ``sqrt``), or ``null`` when the gradient
is finite. Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventModel, NonfiniteFound


def _first_nan(events: Sequence[EventModel]) -> str | None:
    found = [e for e in events if isinstance(e, NonfiniteFound)]
    if not found:
        return None
    e = found[-1]
    if not e.found:
        return "null"
    primitive = e.primal_primitive or e.primitive
    return json.dumps({"primitive": primitive, "line": e.source.line if e.source else None})


ARTEFACTS = {"first_nan": _first_nan}
