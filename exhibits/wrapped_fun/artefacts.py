"""The wrapped_fun exhibit's ``--print`` artefacts (``jaxscope run wrapped_fun FILE --print
stack``):

- ``stack``: a JSON list, outermost first, of ``{"name", "params"}`` for the first stack that
  was entered (``name`` the generator's ``__name__``, ``params`` a short repr of its static
  args as ``name=value, ...``); ``[]`` when no WrappedFun stack was built around the snippet's
  functions (``jit``, ``grad``...).
- ``calls``: a JSON list of ``{"event": "enter"|"leave", "name"}`` in the order the stacks'
  generators and core functions were entered and left (store fills left out).
- ``stacks``: a JSON list of every stack, ``{"core", "entered", "transforms": [names]}``.
- ``stores``: a JSON list of ``{"stack", "transform", "filled", "value"}``.

Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from .events import WrappedFunCallsRecorded, WrappedFunStackBuilt, WrappedFunWatched


def _stacks(events: Sequence[EventBase]) -> list[WrappedFunStackBuilt]:
    return [e for e in events if isinstance(e, WrappedFunStackBuilt)]


def _watched(events: Sequence[EventBase]) -> bool:
    return any(isinstance(e, WrappedFunWatched) for e in events)


def _stack(events: Sequence[EventBase]) -> str | None:
    if not _watched(events):
        return None
    entered = [s for s in _stacks(events) if s.entered > 0]
    if not entered:
        return json.dumps([])
    first = min(entered, key=lambda s: s.index)
    return json.dumps(
        [
            {"name": t.name, "params": ", ".join(f"{p.name}={p.text}" for p in t.params)}
            for t in first.transforms
        ]
    )


def _calls(events: Sequence[EventBase]) -> str | None:
    recorded = [e for e in events if isinstance(e, WrappedFunCallsRecorded)]
    if not recorded:
        return None
    return json.dumps(
        [{"event": s.event, "name": s.name} for e in recorded for s in e.steps if s.event != "fill"]
    )


def _all_stacks(events: Sequence[EventBase]) -> str | None:
    if not _watched(events):
        return None
    return json.dumps(
        [
            {
                "core": s.core_name,
                "entered": s.entered,
                "transforms": [t.name for t in s.transforms],
            }
            for s in _stacks(events)
        ]
    )


def _stores(events: Sequence[EventBase]) -> str | None:
    if not _watched(events):
        return None
    return json.dumps(
        [
            {"stack": s.index, "transform": st.transform, "filled": st.filled, "value": st.value}
            for s in _stacks(events)
            for st in s.stores
        ]
    )


ARTEFACTS = {"stack": _stack, "calls": _calls, "stacks": _all_stacks, "stores": _stores}
