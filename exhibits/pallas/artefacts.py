"""The pallas exhibit's ``--print`` artefacts (``jaxscope run pallas FILE --print blocks``):

- ``blocks``: a JSON list, one entry per program instance (grid point) of each ``pallas_call``
  in grid order: ``{"program_id": [i, j], "reads": {"0": [[start, stop], ...], "1": ...},
  "writes": {"0": [[start, stop], ...]}}``; ``reads`` keys are input indices, ``writes`` keys
  output indices (strings, as JSON keys are), each value the element range ``[start, stop)``
  per array dimension of the block that instance's index map returns. With more than one
  ``pallas_call`` each entry also has ``"call": k``.
- ``kernel_jaxpr``: the kernel's jaxpr as JAX prints it (``str(eqn.params['jaxpr'])``), one per
  call, separated by a blank line.
- ``mosaic`` (option ``target`` "tpu-v5e"): each kernel's Mosaic MLIR module as JAX's Pallas
  TPU lowering made it, one per call, separated by a blank line; or the lowering's error.

``SHOWN_ERRORS``: each finding of the index maps (two program instances of a parallel grid axis
writing one output block, an overwrite, output elements no instance writes, a block that starts
outside its array), an output that
differs from ``reference(*args)`` and a kernel that cannot be lowered or compiled for the TPU
(``target`` "tpu-v5e") are findings (``exhibits/shown.py``): ``jaxscope run`` exits 3.

Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jaxscope.exhibit_api import EventBase

from exhibits.shown import ShownError

from .events import PallasCallFound, PallasMosaicLowered, PallasOutputCompared


def _calls(events: Sequence[EventBase]) -> list[PallasCallFound]:
    return [e for e in events if isinstance(e, PallasCallFound)]


def _blocks(events: Sequence[EventBase]) -> str | None:
    calls = _calls(events)
    if not calls:
        return None
    rows: list[dict[str, Any]] = []
    for call in calls:
        for p in call.programs:
            reads: dict[str, list[list[int]]] = {}
            writes: dict[str, list[list[int]]] = {}
            for op, r in zip(call.operands, p.ranges, strict=True):
                (reads if op.role == "input" else writes)[str(op.index)] = r
            row: dict[str, Any] = {"program_id": p.program_id, "reads": reads, "writes": writes}
            if len(calls) > 1:
                row = {"call": call.index, **row}
            rows.append(row)
    return json.dumps(rows)


def _kernel_jaxpr(events: Sequence[EventBase]) -> str | None:
    calls = _calls(events)
    if not calls:
        return None
    return "\n\n".join(c.kernel_jaxpr.text for c in calls)


def _mosaic(events: Sequence[EventBase]) -> str | None:
    lowered = [e for e in events if isinstance(e, PallasMosaicLowered)]
    if not lowered:
        return None
    return "\n\n".join(e.mosaic or f"error ({e.error_stage}): {e.error}" for e in lowered)


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    out: list[ShownError] = []
    for call in _calls(events):
        line = call.source.line if call.source else None
        for f in call.findings:
            out.append(
                ShownError(
                    error_class={
                        "race": "PallasOutputRace",
                        "overwrite": "PallasOutputOverwritten",
                        "unwritten": "PallasOutputUnwritten",
                        "out_of_bounds": "PallasBlockOutOfBounds",
                        "revisited_later": "PallasOutputRevisitedLater",
                    }[f.kind],
                    message=f.message,
                    computation="the pallas_call's index maps on every grid point",
                    artefact="blocks",
                    line=line,
                    kind="finding",
                )
            )
    for e in events:
        if not isinstance(e, PallasOutputCompared):
            continue
        for o in e.outputs:
            if o.allclose is False:
                where = (
                    f"; first at {o.first_diff_index}: {o.first_diff_got} vs {o.first_diff_want}"
                    if o.first_diff_index is not None
                    else ""
                )
                out.append(
                    ShownError(
                        error_class="ReferenceMismatch",
                        message=f"{o.path} differs from reference(*args) past the tolerance "
                        f"{o.tolerance}{where}",
                        computation="f(*args) (the kernel in interpret mode) against "
                        "reference(*args)",
                        artefact="blocks",
                        line=e.reference_line,
                        kind="finding",
                    )
                )
    for e in events:
        if isinstance(e, PallasMosaicLowered) and e.error is not None:
            out.append(
                ShownError(
                    error_class="MosaicLoweringError"
                    if e.error_stage == "lower"
                    else "MosaicCompileError",
                    message=e.error + (f"\nFix: {e.fix}" if e.fix else ""),
                    computation=f"the pallas_call lowered for {e.target}",
                    artefact="mosaic",
                    line=e.error_line,
                    kind="finding",
                )
            )
    return out


ARTEFACTS = {"blocks": _blocks, "kernel_jaxpr": _kernel_jaxpr, "mosaic": _mosaic}
SHOWN_ERRORS = _shown_errors
