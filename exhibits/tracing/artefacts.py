"""The tracing exhibit's ``jaxscope run tracing FILE --print ARTEFACT`` table: the staged jaxpr
(imports only the exhibit API's events)."""

from __future__ import annotations

from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase, JaxprStaged


def _jaxpr(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, JaxprStaged)]
    return found[-1].jaxpr.text if found else None


ARTEFACTS = {"jaxpr": _jaxpr}
