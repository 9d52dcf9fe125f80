"""The stations exhibit's ``jaxscope run stations FILE --print ARTEFACT`` table: the last of
each station's texts (jaxpr, StableHLO, HLO, the compiled module, its cost and memory
analyses, the outputs), read from the run's events (imports only the events)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeVar

from jaxscope.exhibit_api import EventBase, JaxprStaged

from exhibits.stations.events import ExecutableCompiled, ModuleLowered, ProgramExecuted

T = TypeVar("T")


def _last(events: Sequence[EventBase], kind: type[T]) -> T | None:
    found = [e for e in events if isinstance(e, kind)]
    return found[-1] if found else None


def _jaxpr(events: Sequence[EventBase]) -> str | None:
    e = _last(events, JaxprStaged)
    return e.jaxpr.text if e else None


def _stablehlo(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ModuleLowered)
    return e.stablehlo if e else None


def _hlo(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ModuleLowered)
    return e.hlo if e else None


def _compiled(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return e.compiled_text if e else None


def _cost(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return json.dumps(e.cost, indent=2, sort_keys=True) if e else None


def _memory(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return json.dumps(e.memory, indent=2, sort_keys=True) if e else None


def _output(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ProgramExecuted)
    if e is None:
        return None
    lines = [f"{o.path or 'output'}: {o.dtype}{o.shape}\n{o.preview}" for o in e.outputs]
    if e.zeros_for:
        note = ", ".join(e.zeros_for)
        lines.insert(0, f"# ran on zeros for {note} (ShapeDtypeStruct arguments have no values)")
    return "\n".join(lines)


ARTEFACTS = {
    "jaxpr": _jaxpr,
    "stablehlo": _stablehlo,
    "hlo": _hlo,
    "compiled": _compiled,
    "cost": _cost,
    "memory": _memory,
    "output": _output,
}
