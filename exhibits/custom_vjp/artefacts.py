"""The custom_vjp exhibit's ``--print`` table: ``check`` is JSON with one entry per argument
(``path``, ``max_abs_diff_autodiff``, ``max_abs_diff_fd``) plus the ``problems`` found. Imports
only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import CustomRuleChecked, EventModel


def _check(events: Sequence[EventModel]) -> str | None:
    found = [e for e in events if isinstance(e, CustomRuleChecked)]
    if not found:
        return None
    e = found[-1]
    return json.dumps(
        {
            "name": e.name,
            "kind": e.kind,
            "arguments": [
                {
                    "path": a.path,
                    "max_abs_diff_autodiff": a.max_abs_diff_autodiff,
                    "max_abs_diff_fd": a.max_abs_diff_fd,
                }
                for a in e.arguments
            ],
            "problems": e.problems,
        }
    )


ARTEFACTS = {"check": _check}
