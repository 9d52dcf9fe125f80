"""The shard_map exhibit's ``--print`` table: ``verdict`` is JSON ``{"ok": bool, "error_class":
..., "check": ..., "message": ...}`` (``check``: which of shard_map's checks failed; ``message``:
JAX's text verbatim; ``line``: the snippet line of the specs at fault when a spec check failed,
e.g. ``out_specs = P("x", "w")``; ``explanation``: the exhibit's words beside JAX's error).
``SHOWN_ERRORS``: the check JAX failed (``exhibits/shown.py``). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventBase

from exhibits.shard_map.events import ShardMapChecked
from exhibits.shown import ShownError


def _checked(events: Sequence[EventBase]) -> ShardMapChecked | None:
    found = [e for e in events if isinstance(e, ShardMapChecked)]
    return found[-1] if found else None


def _verdict(events: Sequence[EventBase]) -> str | None:
    e = _checked(events)
    if e is None:
        return None
    return json.dumps(
        {
            "ok": e.ok,
            "error_class": e.error_class,
            "check": e.check,
            "message": e.message,
            "line": e.line,
            "explanation": e.explanation,
        }
    )


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    e = _checked(events)
    if e is None or e.ok:
        return []
    what = "the body" if e.check in (None, "body") else f"shard_map's {e.check} check"
    return [
        ShownError(
            error_class=e.error_class or "Error",
            message=e.message or "",
            computation=f"jax.jit(jax.shard_map(f, ...)): {what}",
            artefact="verdict",
            line=e.line,
            note=e.explanation,
        )
    ]


ARTEFACTS = {"verdict": _verdict}
SHOWN_ERRORS = _shown_errors
