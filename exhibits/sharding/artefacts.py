"""The sharding exhibit's ``--print`` table: ``shard_shapes`` (``args[0]`` placed with ``spec``:
JSON, one shape per device in device order), ``output_shard_shapes`` (the same for what ``f``
returns: one list for a single array, a list of them in leaf order for several),
``collectives`` (JSON op -> count in the compiled HLO) and ``annotations`` (JSON list, one per
``with_sharding_constraint``/``device_put`` inside ``f``: ``{"primitive", "line", "spec",
"shape", "kept", "got", "where", "reason"}``; ``[]`` when ``f`` has none).

``SHOWN_ERRORS``: an annotation the compiled program does not keep, where the user's own call
of ``f`` runs it compiled (inside a ``jit``), is a finding (``ShardingNotKept``): ``jaxscope
run`` exits 3 with one stderr line at the annotation's line.
Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.sharding.events import (
    AnnotationCheck,
    CollectivesFound,
    ShardingAnnotationsChecked,
    ShardingPlaced,
)
from exhibits.shown import ShownError


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


def _checked(events: Sequence[EventBase]) -> ShardingAnnotationsChecked | None:
    found = [e for e in events if isinstance(e, ShardingAnnotationsChecked)]
    return found[-1] if found else None


def _annotations(events: Sequence[EventBase]) -> str | None:
    found = _checked(events)
    if found is None:
        return None
    return json.dumps(
        [
            {
                "primitive": a.primitive,
                "line": a.source.line if a.source else None,
                "spec": a.spec,
                "shape": a.shape,
                "kept": a.kept,
                "got": a.got,
                "where": a.where,
                "reason": a.reason,
                "user_jit": a.user_jit,
            }
            for a in found.annotations
        ]
    )


def headline(a: AnnotationCheck) -> str:
    """The finding in one sentence (the CLI's stderr line; the page says the same)."""
    call = "with_sharding_constraint" if a.primitive == "sharding_constraint" else "device_put"
    value = f"{SHORT.get(a.dtype, a.dtype)}[{','.join(map(str, a.shape))}]"
    where = "as f's " + a.where if a.where.startswith("output") else "compiled alone"
    return (
        f"{call} asked for {a.spec} on {value}; the program holds it {a.got} ({where}): {a.reason}"
    )


SHORT = {"float32": "f32", "float64": "f64", "bfloat16": "bf16", "float16": "f16", "int32": "i32"}


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    found = _checked(events)
    return [
        ShownError(
            error_class="ShardingNotKept",
            message=headline(a),
            computation="jax.jit(f), compiled (Compiled.output_shardings)",
            artefact="annotations",
            line=a.source.line if a.source else None,
            kind="finding",
            note=a.fix,
        )
        for a in (found.annotations if found else [])
        # eagerly, f places the value as asked; None: not measured, so nothing is claimed
        if a.kept is False and a.user_jit
    ]


SHOWN_ERRORS = _shown_errors

ARTEFACTS = {
    "shard_shapes": _shard_shapes,
    "output_shard_shapes": _output_shard_shapes,
    "collectives": _collectives,
    "annotations": _annotations,
}
