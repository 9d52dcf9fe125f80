"""The rules exhibit's ``--print`` table: ``counts`` is JSON column -> count (equal to the sizes
of JAX's own rule tables). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.rules.events import RulesTabulated


def _counts(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, RulesTabulated)]
    return json.dumps(found[-1].counts, sort_keys=True) if found else None


ARTEFACTS = {"counts": _counts}
