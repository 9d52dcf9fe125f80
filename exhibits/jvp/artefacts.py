"""The jvp exhibit's ``jaxscope run jvp FILE --print ARTEFACT`` table (imports only protocol)."""

from __future__ import annotations

from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase, JaxprStaged

from exhibits.jvp.events import JvpJaxprStaged


def _jvp_jaxpr(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, JvpJaxprStaged)]
    return found[-1].jaxpr.text if found else None


def _jaxpr(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, JaxprStaged)]
    return found[-1].jaxpr.text if found else None


ARTEFACTS = {"jvp_jaxpr": _jvp_jaxpr, "jaxpr": _jaxpr}
