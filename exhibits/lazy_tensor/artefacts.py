"""The lazy_tensor exhibit's ``--print`` table: ``ir`` (torch_xla's ``_get_xla_tensors_text``
of ``f``'s outputs before any sync, byte for byte), ``hlo`` (``_get_xla_tensors_hlo``),
``graph_hash`` (``_get_graph_hash`` as hex). Imports only the protocol and this exhibit's
events."""

from __future__ import annotations

from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from .events import LazyGraphBuilt


def _built(events: Sequence[EventBase]) -> LazyGraphBuilt | None:
    found = [e for e in events if isinstance(e, LazyGraphBuilt)]
    return found[-1] if found else None


def _ir(events: Sequence[EventBase]) -> str | None:
    e = _built(events)
    return e.ir if e else None


def _hlo(events: Sequence[EventBase]) -> str | None:
    e = _built(events)
    return e.hlo if e else None


def _graph_hash(events: Sequence[EventBase]) -> str | None:
    e = _built(events)
    return e.graph_hash if e else None


ARTEFACTS = {"ir": _ir, "hlo": _hlo, "graph_hash": _graph_hash}
