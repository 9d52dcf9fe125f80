"""The pjrt_registry exhibit's ``--print`` table: ``branch``, one JSON object
``{"pjrt_device", "branch", "lines": [start, end], "env_read": [...], "ok", "error"}`` (the
branch's name and lines in its file, the environment variables it reads, unconditional ones
first; ``error`` torch_xla's exception text, exactly, or null). Imports only the protocol and
this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from .events import PjrtClientTried


def _branch(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, PjrtClientTried)]
    if not found:
        return None
    tried = found[-1]
    return json.dumps(
        {
            "pjrt_device": tried.pjrt_device,
            "branch": tried.branch.name,
            "lines": tried.branch.lines,
            "env_read": [*tried.branch.env_read, *tried.branch.env_read_if],
            "ok": tried.ok,
            "error": tried.error,
        }
    )


ARTEFACTS = {"branch": _branch}
