"""The shard_map exhibit's ``--print`` table: ``verdict`` is JSON ``{"ok": bool, "error_class":
..., "check": ...}`` (``check``: which of shard_map's checks failed). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventModel, ShardMapChecked


def _verdict(events: Sequence[EventModel]) -> str | None:
    found = [e for e in events if isinstance(e, ShardMapChecked)]
    if not found:
        return None
    e = found[-1]
    return json.dumps({"ok": e.ok, "error_class": e.error_class, "check": e.check})


ARTEFACTS = {"verdict": _verdict}
