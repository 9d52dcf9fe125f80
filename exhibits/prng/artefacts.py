"""The prng exhibit's ``--print`` artefacts (``jaxscope run prng FILE --print key_tree``):

- ``key_tree``: a JSON list, one node per recorded ``jax.random`` call, in order:
  ``{"op", "line", "key_in", "keys_out", "parent"}`` (key data as lists of ints).
- ``reuse``: a JSON list of ``{"line", "first_line", "checker"}``, one per reused key
  (``checker``: ``"jax.debug_key_reuse"`` or ``"jaxscope"`` for raw ``uint32`` keys).

``SHOWN_ERRORS``: each reused key is a finding (``KeyReuse``, ``exhibits/shown.py``): a draw
from a key already consumed repeats its random bits, which JAX computes without complaint
outside ``jax.debug_key_reuse``; ``jaxscope run`` exits 3 and names both lines on stderr.

Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.shown import ShownError

from .events import FIX_MARK, KeyReuseChecked, RandomCallRecorded


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


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    out: list[ShownError] = []
    for e in events:
        if not isinstance(e, KeyReuseChecked):
            continue
        for f in e.findings:
            if f.message and FIX_MARK in f.message:
                # Randomness that does not advance (advance.py): its own words and fix.
                what, fix = f.message.split(FIX_MARK, 1)
                out.append(
                    ShownError(
                        error_class="RandomnessNotAdvancing",
                        message=what,
                        computation="f(*args) as written, its jax.random draws recorded as run",
                        artefact="reuse",
                        line=f.line,
                        note=fix,
                        kind="finding",
                    )
                )
                continue
            first = f"first consumed at line {f.first_line}" if f.first_line else "consumed before"
            by = (
                "jax.debug_key_reuse"
                if f.checker == "jax.debug_key_reuse"
                else "jaxscope's check of raw uint32 keys (jax.debug_key_reuse cannot see them)"
            )
            out.append(
                ShownError(
                    error_class="KeyReuse",
                    message=f"a PRNG key {first} is used again: the two uses draw the same "
                    f"random bits (found by {by})",
                    computation="f(*args) with its jax.random calls recorded",
                    artefact="reuse",
                    line=f.line,
                    note="split the key first: k1, k2 = jax.random.split(key), one per use",
                    kind="finding",
                )
            )
    return out


ARTEFACTS = {"key_tree": _key_tree, "reuse": _reuse}
SHOWN_ERRORS = _shown_errors
