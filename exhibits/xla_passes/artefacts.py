"""The xla_passes exhibit's ``--print`` artefacts.

``--print passes``: the pass names in the dump's order, a JSON list (``["pipeline-start",
"async-collective-replacer", ...]``); a name appears once per run of the pass.

``--print pass:NAME`` (also ``--print 'pass NAME'``): the HLO module text after that pass, as XLA
dumped it. ``NAME`` is the first run of that pass, ``NAME#k`` its k-th run (1-based, in the
order ``passes`` lists them: ``algsimp#3``), and ``#i`` the snapshot at 0-based index ``i`` of
``passes`` (``#0``). A pass that did not change the module prints the text it left unchanged.

Imports only the protocol and this exhibit's events.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from jaxscope.exhibit_api import EventBase

from .events import HloPassRan

Extractor = Callable[[Sequence[EventBase]], str | None]

# ``pass:NAME`` or ``pass NAME`` (one argument, quoted in a shell).
PASS_PREFIX = re.compile(r"^pass[: ](?P<spec>.+)$")
# ``NAME#k`` (the k-th run of NAME) or ``#i`` (the snapshot at index i).
NUMBERED = re.compile(r"(?P<name>.*?)#(?P<k>\d+)")
# The placeholder the CLI's help lists for the family of ``pass:NAME`` artefacts.
PASS_HELP = "pass:NAME[#k]"


def _passes(events: Sequence[EventBase]) -> str | None:
    ran = [e for e in events if isinstance(e, HloPassRan)]
    if not ran:
        return None
    return json.dumps([e.pass_name for e in ran])


def find_pass(ran: Sequence[HloPassRan], spec: str) -> HloPassRan | None:
    """The snapshot ``spec`` names (``NAME``, ``NAME#k``, ``#i``; see the module docstring)."""
    m = NUMBERED.fullmatch(spec.strip())
    if m is None:
        return next((e for e in ran if e.pass_name == spec.strip() and e.occurrence == 1), None)
    name, k = m.group("name"), int(m.group("k"))
    if name == "":
        return ran[k] if k < len(ran) else None
    return next((e for e in ran if e.pass_name == name and e.occurrence == k), None)


def pass_text(ran: Sequence[HloPassRan], at: HloPassRan) -> str | None:
    """The module text after ``at``: its own, or that of the last changed snapshot before it."""
    for e in reversed(ran[: at.index + 1]):
        if e.hlo_text is not None:
            return e.hlo_text
    return None


def _pass(spec: str) -> Extractor:
    def extract(events: Sequence[EventBase]) -> str | None:
        ran = [e for e in events if isinstance(e, HloPassRan)]
        at = find_pass(ran, spec)
        return pass_text(ran, at) if at is not None else None

    return extract


def _placeholder(events: Sequence[EventBase]) -> str | None:
    """``pass:NAME`` itself names no pass: nothing to print."""
    return None


class _Artefacts(dict[str, Extractor]):
    """The table, plus every ``pass:NAME``: the CLI checks ``name in table`` and calls
    ``table[name]``, so the family needs no entry per pass."""

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key) or (
            isinstance(key, str) and PASS_PREFIX.match(key) is not None
        )

    def __missing__(self, key: str) -> Extractor:
        m = PASS_PREFIX.match(key)
        if m is None:
            raise KeyError(key)
        return _pass(m.group("spec"))


ARTEFACTS: dict[str, Extractor] = _Artefacts({"passes": _passes, PASS_HELP: _placeholder})
