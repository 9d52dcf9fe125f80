"""The partial_eval exhibit's ``--print`` table: the known and unknown jaxprs (JAX's text) and the
residuals as JSON, a list of ``[aval, user line]`` (``aval`` as ``f32[3]``, line ``null`` for a
residual that is an input). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventModel, JaxprSplit


def _split(events: Sequence[EventModel]) -> JaxprSplit | None:
    found = [e for e in events if isinstance(e, JaxprSplit)]
    return found[-1] if found else None


def _known(events: Sequence[EventModel]) -> str | None:
    s = _split(events)
    return s.known.text if s else None


def _unknown(events: Sequence[EventModel]) -> str | None:
    s = _split(events)
    return s.unknown.text if s else None


def _residuals(events: Sequence[EventModel]) -> str | None:
    s = _split(events)
    if s is None:
        return None
    return json.dumps([[r.aval.short, r.source.line if r.source else None] for r in s.residuals])


ARTEFACTS = {"known_jaxpr": _known, "unknown_jaxpr": _unknown, "residuals": _residuals}
