"""The recompile_hunt exhibit's ``--print`` table: ``recompiles`` is JSON step -> cause for the
steps that compiled; when the hunt stopped the loop early (its step cap or its time budget) the
object also has a ``"stopped"`` key: ``{"reason": "max_steps" | "time_budget", "steps_run",
"max_steps", "requested_n", "budget_s", "elapsed_s", "message"}`` (``requested_n``: the ``n``
``f`` was called with, ``null`` when ``f`` takes something else), so a loop cut at 200 of
``10**9`` steps does not read as a finished one. Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jaxscope.exhibit_api import EventBase

from exhibits.recompile_hunt.events import TrainingStepObserved, TrainingStopped


def stopped_message(stop: TrainingStopped) -> str:
    """What stopped the loop, in words (the page's ``stoppedText`` says the same)."""
    n = stop.steps_run
    steps = f"{n} {'step' if n == 1 else 'steps'}"
    if stop.max_steps is not None:
        if stop.requested_n is not None and stop.requested_n > stop.max_steps:
            return (
                f"stopped after {steps}: f was called with n = {stop.requested_n}, and the hunt "
                f"watches at most {stop.max_steps} steps (the step cap stopped it; the rest of "
                "the loop was not run)"
            )
        return (
            f"stopped after {steps}: the hunt watches at most {stop.max_steps} steps and the "
            "loop called step again"
            + (
                f" although f was called with n = {stop.requested_n} (does the loop use n?)"
                if stop.requested_n is not None
                else ""
            )
        )
    return (
        f"stopped after {steps}: the loop ran for its {stop.budget_s:g} s time budget "
        f"({stop.elapsed_s:.1f} s)"
    )


def _recompiles(events: Sequence[EventBase]) -> str | None:
    steps = [e for e in events if isinstance(e, TrainingStepObserved)]
    out: dict[str, Any] = {str(s.step): s.cause for s in steps if s.compiled}
    stops = [e for e in events if isinstance(e, TrainingStopped)]
    if stops:
        stop = stops[0]
        out["stopped"] = {
            "reason": "max_steps" if stop.max_steps is not None else "time_budget",
            "steps_run": stop.steps_run,
            "max_steps": stop.max_steps,
            "requested_n": stop.requested_n,
            "budget_s": stop.budget_s,
            "elapsed_s": stop.elapsed_s,
            "message": stopped_message(stop),
        }
    return json.dumps(out)


ARTEFACTS = {"recompiles": _recompiles}
