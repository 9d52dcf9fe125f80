"""The prng exhibit's ``--print`` artefacts (``jaxscope run prng FILE --print key_tree``):

- ``key_tree``: a JSON list, one node per recorded ``jax.random`` call, in order:
  ``{"op", "line", "key_in", "keys_out", "parent"}`` (key data as lists of ints).
- ``reuse``: a JSON list of ``{"line", "first_line", "checker"}``, one per reused key
  (``checker``: ``"jax.debug_key_reuse"`` or ``"jaxscope"`` for raw ``uint32`` keys).

Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventBase

from .events import KeyReuseChecked, RandomCallRecorded


def _key_tree(events: Sequence[EventBase]) -> str | None:
    calls = [e for e in events if isinstance(e, RandomCallRecorded)]
    if not calls and not any(isinstance(e, KeyReuseChecked) for e in events):
        return None
    return json.dumps(
        [
            {
                "op": c.op,
                "line": c.line,
                "key_in": c.key_in,
                "keys_out": c.keys_out,
                "parent": c.parent,
            }
            for c in calls
        ]
    )


def _reuse(events: Sequence[EventBase]) -> str | None:
    checked = [e for e in events if isinstance(e, KeyReuseChecked)]
    if not checked:
        return None
    return json.dumps(
        [
            {"line": f.line, "first_line": f.first_line, "checker": f.checker}
            for e in checked
            for f in e.findings
        ]
    )


ARTEFACTS = {"key_tree": _key_tree, "reuse": _reuse}
