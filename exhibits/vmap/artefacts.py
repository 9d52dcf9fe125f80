"""The vmap exhibit's ``--print`` table: ``batched_jaxpr`` (JAX's text of ``make_jaxpr(vmap(f,
in_axes, out_axes))``), ``bdims`` (JSON: one ``[primitive, in_bdims, out_bdims]`` per eqn of the
unbatched jaxpr, ``null`` = not mapped) and ``output_shape`` (JSON: one shape list per output).
Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.vmap.events import BatchedJaxprStaged, BatchRuleApplied


def _batched(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, BatchedJaxprStaged)]
    return found[-1].jaxpr.text if found else None


def _bdims(events: Sequence[EventBase]) -> str | None:
    steps = [e for e in events if isinstance(e, BatchRuleApplied)]
    if not steps:
        return None
    return json.dumps([[s.primitive, s.in_bdims, s.out_bdims] for s in steps])


def _output_shape(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, BatchedJaxprStaged)]
    return json.dumps([o.shape for o in found[-1].outputs]) if found else None


ARTEFACTS = {"batched_jaxpr": _batched, "bdims": _bdims, "output_shape": _output_shape}
