"""The control_flow exhibit's ``--print`` table: ``verdict`` is JSON ``{"ok": bool,
"error_class": ..., "leaf_path": ..., "message": ..., "line": ...}`` for the first loop/cond whose
carry or branch types JAX checked (the first failing one when any fails; ``message`` JAX's text
verbatim, ``line`` the snippet line of the call); for a run without any, ``ok`` true and a
``note`` saying so. ``SHOWN_ERRORS``: every check JAX failed (``exhibits/shown.py``). Imports only
the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase, RunFinished

from exhibits.control_flow.events import CarryChecked
from exhibits.shown import ShownError


def _verdict(events: Sequence[EventBase]) -> str | None:
    checks = [e for e in events if isinstance(e, CarryChecked)]
    if not checks:
        if not any(isinstance(e, RunFinished) for e in events):
            return None  # the run failed before JAX checked anything
        return json.dumps(
            {
                "ok": True,
                "error_class": None,
                "leaf_path": None,
                "note": "f has no lax.scan, while_loop, fori_loop, cond or switch: "
                "no carry or branch types to check",
            }
        )
    failing = [c for c in checks if not c.ok]
    c = failing[0] if failing else checks[0]
    return json.dumps(
        {
            "ok": c.ok,
            "error_class": c.error_class,
            "leaf_path": c.leaf_path,
            "message": c.message,
            "line": c.source.line if c.source else None,
        }
    )


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    return [
        ShownError(
            error_class=c.error_class or "Error",
            message=c.message or "",
            computation=f"{c.api}'s branch output check"
            if c.primitive == "cond"
            else f"the {c.api} carry check",
            artefact="verdict",
            line=c.source.line if c.source else None,
        )
        for c in events
        if isinstance(c, CarryChecked) and not c.ok
    ]


ARTEFACTS = {"verdict": _verdict}
SHOWN_ERRORS = _shown_errors
