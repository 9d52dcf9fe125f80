"""The stations exhibit's ``jaxscope run stations FILE --print ARTEFACT`` table: the last of
each station's texts (jaxpr, StableHLO, HLO, the compiled module, its cost and memory
analyses, the outputs), read from the run's events (imports only the events)."""

from __future__ import annotations

import base64
import json
import math
import sys
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import numpy as np
from jaxscope.exhibit_api import ArrayPreview, EventBase, JaxprStaged

from exhibits.digits import shortest
from exhibits.stations.events import (
    ExecutableCompiled,
    ModuleLowered,
    OutputValuesSent,
    ProgramExecuted,
)

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
    whole = whole_outputs(e.outputs, events)
    lines = [
        f"{o.path or 'output'}: {o.dtype}{o.shape}\n{whole.get(i, o.preview)}"
        for i, o in enumerate(e.outputs)
    ]
    if e.zeros_for:
        note = ", ".join(e.zeros_for)
        lines.insert(0, f"# ran on zeros for {note} (ShapeDtypeStruct arguments have no values)")
    return "\n".join(lines)


def whole_outputs(outputs: Sequence[ArrayPreview], events: Sequence[EventBase]) -> dict[int, str]:
    """The printout of every output leaf whose preview is summarised, whole, from the run's
    :class:`OutputValuesSent` events (a run for the CLI sends them: design 0060), by output
    index: numpy's printout with every element, each float the shortest decimal that rounds
    back to it in its dtype (``floatmode="unique"``; bfloat16 and the float8s through
    ``exhibits.digits.shortest``). A leaf whose parts do not add up is left to its preview."""
    parts: dict[int, list[OutputValuesSent]] = {}
    for event in events:
        if isinstance(event, OutputValuesSent) and 0 <= event.output < len(outputs):
            parts.setdefault(event.output, []).append(event)
    out: dict[int, str] = {}
    for index, sent in parts.items():
        view = outputs[index]
        try:
            dtype = np.dtype(view.dtype)
        except TypeError:
            continue
        chunks = sorted(sent, key=lambda x: x.start)
        pieces = [np.frombuffer(base64.b64decode(x.data), dtype) for x in chunks]
        at = 0
        for x, piece in zip(chunks, pieces, strict=True):
            if x.start != at or piece.size != x.count:
                break
            at += x.count
        else:
            if at == math.prod(view.shape):
                out[index] = _printout(np.concatenate(pieces).reshape(view.shape))
    return out


def _printout(arr: np.ndarray) -> str:
    """numpy's printout of every element of ``arr``, as the preview's but never summarised."""
    with np.printoptions(threshold=sys.maxsize, linewidth=100, floatmode="unique"):
        if arr.dtype.kind in "biufc":
            return np.array2string(arr, separator=", ")
        name = str(arr.dtype)

        def one(v: object) -> str:  # an ml_dtypes float, in its own shortest digits
            return repr(shortest(float(cast(Any, v)), name))

        return np.array2string(arr, separator=", ", formatter={"all": one})


ARTEFACTS = {
    "jaxpr": _jaxpr,
    "stablehlo": _stablehlo,
    "hlo": _hlo,
    "compiled": _compiled,
    "cost": _cost,
    "memory": _memory,
    "output": _output,
}

# The artefacts a run makes only by running the program (the Run station's).
RUN_ARTEFACTS = ("output",)


def _unavailable(artefact: str, options: object) -> str | None:
    """Why a run with ``options`` makes no ``artefact``, known before it runs (``jaxscope run``
    refuses it as a usage error): option ``target`` "tpu-v5e" compiles only (design 0067)."""
    if getattr(options, "target", None) == "tpu-v5e" and artefact in RUN_ARTEFACTS:
        made = ", ".join(a for a in ARTEFACTS if a not in RUN_ARTEFACTS)
        return (
            f"the TPU v5e target compiles only: nothing is run (no chip here), so there is no "
            f"{artefact!r}; this target prints {made} (or drop --target to run it here)"
        )
    return None


UNAVAILABLE = _unavailable
