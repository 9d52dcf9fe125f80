"""The transform_order exhibit's ``--print`` table for the stack chosen with ``--stack``:
``result`` (the value on the example input, one printout per output), ``jaxpr`` (JAX's text) and
``error`` (``ErrorClass: message`` when JAX rejects the stack, empty otherwise). Imports only the
protocol."""

from __future__ import annotations

from collections.abc import Sequence

from jaxscope.protocol import EventModel, TransformStackEvaluated


def _first(events: Sequence[EventModel]) -> TransformStackEvaluated | None:
    # The stack the user asked for is evaluated first; built-in comparisons follow it.
    found = [e for e in events if isinstance(e, TransformStackEvaluated)]
    return found[0] if found else None


def _result(events: Sequence[EventModel]) -> str | None:
    e = _first(events)
    if e is None or not e.ok:
        return None
    return "\n".join(f"{o.path or 'output'}: {o.dtype}{o.shape}\n{o.preview}" for o in e.result)


def _jaxpr(events: Sequence[EventModel]) -> str | None:
    e = _first(events)
    return e.jaxpr.text if e and e.jaxpr else None


def _error(events: Sequence[EventModel]) -> str | None:
    e = _first(events)
    if e is None:
        return None
    return "" if e.ok else f"{e.error_class}: {e.message}"


ARTEFACTS = {"result": _result, "jaxpr": _jaxpr, "error": _error}
