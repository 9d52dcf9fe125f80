"""The xla_cache exhibit's ``--print`` table and finding.

``counters``: a JSON list, one object per step (``step``, ``graph_hash``, ``new_hash``, and the
step's metric deltas: ``compiles``, ``compile_ns``, ``uncached``, ``cached``, ``executions``,
``execute_ns``, ``to_device``, ``to_device_ns``, ``from_device``, ``from_device_ns``, then
``wall_ns``, and ``cuts``: the step's graph cuts that ran a program), indented by 1.
``SHOWN_ERRORS``: ``RecompileEveryStep`` (a finding) when two or more steps after the first
compiled (``UncachedCompile`` grew); inside a step (issue 33), ``CompilesInsideStep`` when a
host read compiled a new graph at each of its reads, ``HostReadSplitsStep`` when a host read
ran a graph before the step's end. Imports only the protocol and
this exhibit's events.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.shown import ShownError

from .events import XlaLoopFinished, XlaStepCounted


def step_rows(events: Sequence[EventBase]) -> list[dict[str, object]]:
    """One dict per step: the hash, whether it is new, the counter deltas, the wall time."""
    return [
        {
            "step": e.step,
            "graph_hash": e.graph_hash,
            "new_hash": e.new_hash,
            **e.counters.model_dump(),
            "wall_ns": e.wall_ns,
            "cuts": [c.model_dump() for c in e.cuts],
        }
        for e in events
        if isinstance(e, XlaStepCounted)
    ]


def _counters(events: Sequence[EventBase]) -> str | None:
    rows = step_rows(events)
    return json.dumps(rows, indent=1) if rows else None


def _finished(events: Sequence[EventBase]) -> XlaLoopFinished | None:
    found = [e for e in events if isinstance(e, XlaLoopFinished)]
    return found[-1] if found else None


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    end = _finished(events)
    if end is None or not end.cause:
        return []
    if end.cause in _INSIDE:
        error_class, message = _INSIDE[end.cause], f"{end.detail}: {end.fix}"
    else:
        steps = ", ".join(str(s) for s in end.recompiling_steps)
        what = {
            "shape": "a new input shape",
            "device_pad": "a new input shape, padded on the device",
        }.get(end.cause, "a changing constant in the graph")
        error_class = "RecompileEveryStep"
        message = f"torch_xla compiled a new graph on steps {steps} ({what}): {end.fix}"
    return [
        ShownError(
            error_class=error_class,
            message=message,
            computation="the training loop",
            artefact="counters",
            line=end.line,
            kind="finding",
        )
    ]


# The findings inside one step (issue 33): their error classes.
_INSIDE = {
    "seed": "CompilesInsideStep",
    "repeat": "CompilesInsideStep",
    "host_read": "HostReadSplitsStep",
}


ARTEFACTS = {"counters": _counters}
SHOWN_ERRORS = _shown_errors
