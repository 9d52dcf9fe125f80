"""The xla_cache exhibit's ``--print`` table and finding.

``counters``: a JSON list, one object per step (``step``, ``graph_hash``, ``new_hash``, and the
step's metric deltas: ``compiles``, ``compile_ns``, ``uncached``, ``cached``, ``executions``,
``execute_ns``, ``to_device``, ``to_device_ns``, ``from_device``, ``from_device_ns``, then
``wall_ns``), indented by 1. ``SHOWN_ERRORS``: ``RecompileEveryStep`` (a finding) when two or
more steps after the first compiled (``UncachedCompile`` grew). Imports only the protocol and
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
    steps = ", ".join(str(s) for s in end.recompiling_steps)
    what = "a new input shape" if end.cause == "shape" else "a changing constant in the graph"
    return [
        ShownError(
            error_class="RecompileEveryStep",
            message=f"torch_xla compiled a new graph on steps {steps} ({what}): {end.fix}",
            computation="the training loop",
            artefact="counters",
            line=end.line,
            kind="finding",
        )
    ]


ARTEFACTS = {"counters": _counters}
SHOWN_ERRORS = _shown_errors
