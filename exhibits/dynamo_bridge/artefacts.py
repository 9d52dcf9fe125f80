"""The dynamo_bridge exhibit's ``--print`` table.

``fx``: each FX graph dynamo handed over, in order: a ``# graph N (frame): reason`` line (the
reason's first line), then
``gm.code`` as FX generated it, graphs separated by a blank line. ``regions``: a JSON list of the
run's regions in source order (``kind``, ``graph``, ``program``, ``graph_hash``, ``what``,
``lines``), indented by 1. ``calls``: a JSON list, one object per call (``call``, ``graphs``,
``compiled``, ``launched``, and the metric deltas). Imports only the protocol and this exhibit's
events.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from .events import DynamoCallCounted, DynamoGraphCaptured, DynamoRegionsFound


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def fx_text(events: Sequence[EventBase]) -> str | None:
    graphs = [e for e in events if isinstance(e, DynamoGraphCaptured)]
    if not graphs:
        return None
    return "\n\n".join(
        f"# graph {g.index} ({g.frame or '?'}): {_first_line(g.reason)}\n{g.code}" for g in graphs
    )


def region_rows(events: Sequence[EventBase]) -> list[dict[str, object]]:
    found = [e for e in events if isinstance(e, DynamoRegionsFound)]
    if not found:
        return []
    return [r.model_dump(exclude={"code"}) for r in found[-1].regions]


def _regions(events: Sequence[EventBase]) -> str | None:
    rows = region_rows(events)
    return json.dumps(rows, indent=1) if rows else None


def call_rows(events: Sequence[EventBase]) -> list[dict[str, object]]:
    return [
        {
            "call": e.call,
            "graphs": e.graphs,
            "compiled": e.compiled,
            "launched": e.launched,
            **e.counters.model_dump(),
            "wall_ns": e.wall_ns,
        }
        for e in events
        if isinstance(e, DynamoCallCounted)
    ]


def _calls(events: Sequence[EventBase]) -> str | None:
    rows = call_rows(events)
    return json.dumps(rows, indent=1) if rows else None


ARTEFACTS = {"fx": fx_text, "regions": _regions, "calls": _calls}


def NOTES(events: Sequence[EventBase]) -> list[str]:
    """A run whose calls gave dynamo nothing to compile: no FX graph, so no XLA program."""
    calls = [e for e in events if isinstance(e, DynamoCallCounted)]
    graphs = [e for e in events if isinstance(e, DynamoGraphCaptured)]
    if calls and not graphs:
        return [
            "dynamo handed the backend no FX graph: f ran no tensor op dynamo could trace, so "
            "nothing was compiled or launched on the XLA device"
        ]
    return []
