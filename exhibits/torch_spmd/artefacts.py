"""The torch_spmd exhibit's ``--print`` table: ``tiles`` (each sharded argument's spec, tile
assignment and the runtime's sharding text, one line each), ``hlo`` (the pending HLO with its
``sharding=`` annotations, ``_get_xla_tensors_hlo`` byte for byte), ``partitioned`` (the
programs XLA compiled after SPMD partitioning, from its dump), ``collectives`` (one line per
collective). Imports only the protocol and this exhibit's events."""

from __future__ import annotations

from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from .events import SpmdArgSharded, SpmdHloAnnotated, SpmdProgramPartitioned


def tile_lines(events: Sequence[EventBase]) -> list[str]:
    """``args[i] SPEC -> tile_assignment[SHAPE] IDS TYPE SHARDING`` per sharded argument."""
    return [
        f"args[{e.index}] {e.spec} -> tile_assignment{e.tile_shape} "
        f"{' '.join(map(str, e.tile_assignment))} {e.sharding_type} {e.sharding}"
        for e in events
        if isinstance(e, SpmdArgSharded)
    ]


def _tiles(events: Sequence[EventBase]) -> str | None:
    lines = tile_lines(events)
    return "\n".join(lines) if lines else None


def _hlo(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, SpmdHloAnnotated)]
    return found[-1].hlo if found else None


def _partitioned(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, SpmdProgramPartitioned)]
    return "\n".join(e.hlo for e in found) if found else None


def collective_lines(events: Sequence[EventBase]) -> list[str]:
    """``MODULE OPCODE RESULT groups=GROUPS`` per collective of each partitioned program."""
    return [
        f"{e.module} {c.opcode} {c.result} groups={c.groups_text}"
        for e in events
        if isinstance(e, SpmdProgramPartitioned)
        for c in e.collectives
    ]


def _collectives(events: Sequence[EventBase]) -> str | None:
    if not any(isinstance(e, SpmdProgramPartitioned) for e in events):
        return None
    return "\n".join(collective_lines(events))


ARTEFACTS = {
    "tiles": _tiles,
    "hlo": _hlo,
    "partitioned": _partitioned,
    "collectives": _collectives,
}
