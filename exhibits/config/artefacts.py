"""The config exhibit's ``--print`` table: ``options`` is JSON name -> ``{value, scoped,
trace_context}``, ``value`` a JSON value (true, 3, 0.5, "highest", null) where the option's value
is one, else its Python ``repr`` as a string. Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.config.events import ConfigOptionsListed


def _options(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, ConfigOptionsListed)]
    if not found:
        return None
    return json.dumps(
        {
            o.name: {
                "value": o.value if o.value_json is None else json.loads(o.value_json),
                "scoped": o.scoped,
                "trace_context": o.trace_context,
            }
            for o in found[-1].options
        }
    )


ARTEFACTS = {"options": _options}
