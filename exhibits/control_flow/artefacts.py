"""The control_flow exhibit's ``--print`` table: ``verdict`` is JSON ``{"ok": bool,
"error_class": ..., "leaf_path": ...}`` for the first loop/cond whose carry or branch types JAX
checked (the first failing one when any fails); for a run without any, ``ok`` true and a
``note`` saying so. Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import CarryChecked, EventModel, RunFinished


def _verdict(events: Sequence[EventModel]) -> str | None:
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
    return json.dumps({"ok": c.ok, "error_class": c.error_class, "leaf_path": c.leaf_path})


ARTEFACTS = {"verdict": _verdict}
