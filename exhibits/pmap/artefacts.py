"""The pmap exhibit's ``--print`` table: ``jaxpr`` (the text of ``jax.make_jaxpr(jax.pmap(f))``,
the jit around the shard_map), ``per_device`` (JSON, one object per device in mesh order:
``{"device": id, "index": row, "inputs": {path: shape}, "outputs": {path: values}}``; an output
past the size limit is ``null``) and ``equivalents`` (JSON, one object per version:
``{"name", "compared", "equal", "max_abs_diff"}``). Imports only the protocol and the events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase, JaxprStaged

from exhibits.pmap.events import PmapDevicesRun, PmapEquivalentsCompared


def _jaxpr(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, JaxprStaged)]
    return found[-1].jaxpr.text if found else None


def _per_device(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, PmapDevicesRun)]
    if not found:
        return None
    return json.dumps(
        [
            {
                "device": d.device_id,
                "index": d.index,
                "inputs": {leaf.path: leaf.shape for leaf in d.inputs},
                "outputs": {leaf.path: v for leaf, v in zip(d.outputs, d.values, strict=True)},
            }
            for d in found[-1].devices
        ]
    )


def _equivalents(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, PmapEquivalentsCompared)]
    if not found:
        return None
    return json.dumps(
        [
            {
                "name": v.name,
                "compared": v.compared,
                "equal": v.equal,
                "max_abs_diff": v.max_abs_diff,
            }
            for v in found[-1].versions
        ]
    )


ARTEFACTS = {"jaxpr": _jaxpr, "per_device": _per_device, "equivalents": _equivalents}
