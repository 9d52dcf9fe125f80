"""The sharding exhibit's ``--print`` table: ``shard_shapes`` (``args[0]`` placed with ``spec``:
JSON, one shape per device in device order), ``output_shard_shapes`` (the same for what ``f``
returns: one list for a single array, a list of them in leaf order for several) and
``collectives`` (JSON op -> count in the compiled HLO). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventBase

from exhibits.sharding.events import CollectivesFound, ShardingPlaced


def _placed(events: Sequence[EventBase], prefix: str) -> list[ShardingPlaced]:
    return [e for e in events if isinstance(e, ShardingPlaced) and e.name.startswith(prefix)]


def _shard_shapes(events: Sequence[EventBase]) -> str | None:
    found = _placed(events, "args[0]")
    return json.dumps([s.shape for s in found[0].shards]) if found else None


def _output_shard_shapes(events: Sequence[EventBase]) -> str | None:
    found = _placed(events, "output")
    if not found:
        return None
    lists = [[s.shape for s in e.shards] for e in found]
    return json.dumps(lists[0] if len(lists) == 1 else lists)


def _collectives(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, CollectivesFound)]
    return json.dumps(found[-1].counts, sort_keys=True) if found else None


ARTEFACTS = {
    "shard_shapes": _shard_shapes,
    "output_shard_shapes": _output_shard_shapes,
    "collectives": _collectives,
}
