"""The pytree exhibit's ``--print`` table, for the snippet's ``args``: ``keypaths`` (JSON list
of ``keystr`` strings in leaf order; on a container with more leaves than the exhibit lists, the
object ``{"keypaths": [the first ones], "leaves_omitted": N, "num_leaves": total}``, so a cut
list never reads as complete), ``treedef`` (JAX's own string) and ``num_leaves``. Imports only
the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.pytree.events import PytreeFlattened


def _args(events: Sequence[EventBase]) -> PytreeFlattened | None:
    found = [e for e in events if isinstance(e, PytreeFlattened) and e.name == "args"]
    return found[0] if found else None


def _keypaths(events: Sequence[EventBase]) -> str | None:
    e = _args(events)
    if e is None:
        return None
    if e.leaves_omitted:
        # Cut at MAX_LEAVES: say so rather than print a list that looks complete.
        return json.dumps(
            {
                "keypaths": e.keypaths,
                "leaves_omitted": e.leaves_omitted,
                "num_leaves": e.num_leaves,
            }
        )
    return json.dumps(e.keypaths)


def _treedef(events: Sequence[EventBase]) -> str | None:
    e = _args(events)
    return e.treedef if e else None


def _num_leaves(events: Sequence[EventBase]) -> str | None:
    e = _args(events)
    return str(e.num_leaves) if e else None


ARTEFACTS = {"keypaths": _keypaths, "treedef": _treedef, "num_leaves": _num_leaves}
