"""Outputs sent whole to a run that prints whole artefacts (the CLI's, ``details = "eager"``;
issue 33, design 0060): the values of each output leaf whose preview numpy summarises, as
``output_values_sent`` events right after the event whose outputs they are (stations'
``program_executed``, transform_order's user stack). The artefacts print them whole
(``exhibits/stations/artefacts.py: whole_outputs``). Runs in the worker (imports JAX)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxscope.exhibit_api import ArrayPreview

from exhibits.stations.events import OutputValuesSent

# numpy's printout summarises past this many elements (``preview_value``'s threshold).
SUMMARISED_FROM = 50
# The bytes of values one OutputValuesSent carries (1.4 MB of base64 on the line).
BYTES_PER_EVENT = 2**20
# The base64 all the outputs' values may take (the supervisor ends a run past 64 MiB of
# events); an output past it keeps its preview.
MAX_VALUES_BYTES = 32 * 2**20


def values_sent(outputs: Sequence[ArrayPreview], out: Any) -> list[OutputValuesSent]:
    """The values of every leaf of ``out`` whose preview in ``outputs`` (its previews, one per
    leaf in order) is summarised, as :class:`OutputValuesSent` events of at most
    :data:`BYTES_PER_EVENT` each. A leaf numpy cannot hold as numbers (a PRNG key array,
    float0) keeps its preview."""
    leaves = jax.tree.leaves(out)
    if len(leaves) != len(outputs):
        return []
    events: list[OutputValuesSent] = []
    budget = MAX_VALUES_BYTES
    for index, (view, leaf) in enumerate(zip(outputs, leaves, strict=True)):
        try:
            arr = np.asarray(leaf)
        except Exception:  # a PRNG key array: its preview is JAX's repr
            continue
        numeric = arr.dtype == np.bool_ or jnp.issubdtype(arr.dtype, np.number)
        if arr.size <= SUMMARISED_FROM or not numeric or view.dtype != str(arr.dtype):
            continue
        flat = np.ascontiguousarray(arr).ravel()  # native order: little-endian on JAX's hosts
        if flat.nbytes * 4 // 3 > budget:  # past the run's stream limit: its preview stands
            continue
        budget -= flat.nbytes * 4 // 3
        step = max(1, BYTES_PER_EVENT // flat.itemsize)
        for start in range(0, flat.size, step):
            part = flat[start : start + step]
            events.append(
                OutputValuesSent(
                    output=index,
                    path=view.path,
                    dtype=str(arr.dtype),
                    start=start,
                    count=int(part.size),
                    data=base64.b64encode(part.tobytes()).decode("ascii"),
                )
            )
    return events
