"""The transform_order exhibit's ``--print`` table for the stack chosen with ``--stack``:
``result`` (the value on the example input, one printout per output), ``jaxpr`` (JAX's text) and
``error`` (``ErrorClass: message`` when JAX rejects the stack, empty otherwise) and
``output_leaf`` (only when a ``grad``/``value_and_grad`` chip differentiated the first leaf of a
pytree output: per chip, its note and the output's structure).
``SHOWN_ERRORS``: the user's stack when JAX rejected it (``exhibits/shown.py``; the built-in
comparisons that follow are not the user's code). Imports only the protocol."""

from __future__ import annotations

from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.shown import ShownError
from exhibits.stations.artefacts import whole_outputs
from exhibits.transform_order.events import TransformStackEvaluated


def _first(events: Sequence[EventBase]) -> TransformStackEvaluated | None:
    # The stack the user asked for is evaluated first; built-in comparisons follow it.
    found = [e for e in events if isinstance(e, TransformStackEvaluated)]
    return found[0] if found else None


def _result(events: Sequence[EventBase]) -> str | None:
    e = _first(events)
    if e is None or not e.ok:
        return None
    # A run for the CLI sent the summarised results whole after the user's stack (design 0060).
    whole = whole_outputs(e.result, _sent_after(events, e))
    return "\n".join(
        f"{o.path or 'output'}: {o.dtype}{o.shape}\n{whole.get(i, o.preview)}"
        for i, o in enumerate(e.result)
    )


def _sent_after(events: Sequence[EventBase], e: TransformStackEvaluated) -> list[EventBase]:
    """The events between the user's stack and the next stack evaluated (its outputs' values)."""
    at = next(i for i, x in enumerate(events) if x is e)
    out: list[EventBase] = []
    for x in events[at + 1 :]:
        if isinstance(x, TransformStackEvaluated):
            break
        out.append(x)
    return out


def _jaxpr(events: Sequence[EventBase]) -> str | None:
    e = _first(events)
    return e.jaxpr.text if e and e.jaxpr else None


def _error(events: Sequence[EventBase]) -> str | None:
    e = _first(events)
    if e is None:
        return None
    return "" if e.ok else f"{e.error_class}: {e.message}"


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    e = _first(events)
    if e is None or e.ok or e.group != "user":
        return []
    return [
        ShownError(
            error_class=e.error_class or "Error",
            message=e.message or "",
            computation=e.code or e.label,
            artefact="error",
            line=e.source.line if e.source else None,
            note=e.explanation,
        )
    ]


def _output_leaf(events: Sequence[EventBase]) -> str | None:
    e = _first(events)
    if e is None or not e.output_leaf:
        return None
    notes = [f"{e.stack[leaf.chip or 0]}: {leaf.note}" for leaf in e.output_leaf]
    return "\n".join(
        f"{note}\noutput: {leaf.structure}" for note, leaf in zip(notes, e.output_leaf, strict=True)
    )


def _notes(events: Sequence[EventBase]) -> list[str]:
    """Each grad chip's first-leaf note (``jaxscope.grad_output``), as ``output_leaf`` has it."""
    e = _first(events)
    if e is None:
        return []
    return [f"{e.stack[leaf.chip or 0]}: {leaf.note}" for leaf in e.output_leaf]


ARTEFACTS = {"result": _result, "jaxpr": _jaxpr, "error": _error, "output_leaf": _output_leaf}
SHOWN_ERRORS = _shown_errors
NOTES = _notes
