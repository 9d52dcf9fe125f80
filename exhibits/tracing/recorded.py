"""The tracing exhibit's ``eqn_recorded`` events, made of the records JAX's tracer left
(``recording_eqns``, a walker of the internals that returns records: design 0059). The stations
exhibit streams the same events while it traces."""

from __future__ import annotations

from collections.abc import Callable

from jaxscope.exhibit_api import EventBase, RecordedEqn

from exhibits.tracing.events import EqnRecorded


def eqn_event(record: RecordedEqn) -> EqnRecorded:
    """The :class:`EqnRecorded` event of one recorded eqn."""
    return EqnRecorded(
        index=record.index,
        primitive=record.primitive,
        params=record.params,
        in_avals=record.in_avals,
        out_avals=record.out_avals,
        source=record.source,
    )


def emitting(emit: Callable[[EventBase], None]) -> Callable[[RecordedEqn], None]:
    """The ``recording_eqns`` callback that emits each record's event with ``emit``."""
    return lambda record: emit(eqn_event(record))
