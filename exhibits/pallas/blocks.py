"""What the index maps of one ``pallas_call`` say, grid point by grid point: the element ranges
each program instance reads and writes, the output blocks written twice, the output elements
never written, and the findings that follow (``events.PallasCallFound``).

Pure numpy over the block indices ``jaxscope.internals.api.pallas_block_indices`` evaluated; the
grid order is interpret mode's (``np.ndindex``: row-major, the last axis fastest).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .events import PallasBlockDim, PallasCallFinding, PallasRevisit

# Grid axis semantics under which two program instances may run at the same time
# (``pltpu.CompilerParams(dimension_semantics=...)``; ``arbitrary`` runs in order).
PARALLEL = ("parallel", "core_parallel", "subcore_parallel")


def element_ranges(
    block: Sequence[PallasBlockDim], shape: Sequence[int], indices: np.ndarray
) -> np.ndarray:
    """``[start, stop)`` per array dimension of the block at ``indices`` (``int[n, ndim]``, one
    row per grid point): ``int64[n, ndim, 2]``. A ``blocked`` dimension's block ``i`` starts at
    ``i * size``; a ``squeezed`` one's index is the element; an ``element`` one's index is the
    start offset. Clipped to the array (a partial last block is shorter, an index past the end
    covers nothing: ``start == stop``)."""
    n = indices.shape[0]
    out = np.zeros((n, len(shape), 2), dtype=np.int64)
    for d, (dim, extent) in enumerate(zip(block, shape, strict=True)):
        i = indices[:, d]
        start = i * dim.size if dim.kind == "blocked" else i
        stop = start + dim.size
        out[:, d, 0] = np.clip(start, 0, extent)
        out[:, d, 1] = np.clip(stop, 0, extent)
    return out


def _covered(shape: Sequence[int], ranges: np.ndarray) -> int:
    """How many elements of an array of ``shape`` the ``ranges`` (``[n, ndim, 2]``) cover."""
    mask = np.zeros(tuple(shape), dtype=bool)
    for r in ranges:
        mask[tuple(slice(int(a), int(b)) for a, b in r)] = True
    return int(mask.sum())


@dataclass(frozen=True)
class OutputWrites:
    """What the grid does to one output (``index`` among the outputs, ``operand`` among all
    operands): its block indices per grid point (``int[n, ndim]``),
    the element ranges they cover, the kernel's effects on its ref (written at the top level,
    maybe read), its shape, and whether ``input_output_aliases`` makes it an input's buffer (its
    unwritten elements keep the input's values)."""

    index: int
    operand: int
    shape: tuple[int, ...]
    blocks: np.ndarray
    ranges: np.ndarray
    written: bool
    read: bool
    aliased: bool = False
    revisit_any: bool = False


def revisits(program_ids: np.ndarray, out: OutputWrites) -> list[PallasRevisit]:
    """The blocks of ``out`` that more than one grid point writes, in the order of their first
    writer, with the grid axes along which the writers' program ids differ."""
    writers: dict[tuple[int, ...], list[int]] = {}
    for p, block in enumerate(out.blocks):
        writers.setdefault(tuple(int(b) for b in block), []).append(p)
    found = []
    for block, ps in writers.items():
        if len(ps) < 2:
            continue
        ids = program_ids[ps]
        axes = [a for a in range(ids.shape[1]) if len(set(ids[:, a].tolist())) > 1]
        found.append(
            PallasRevisit(output=out.index, block=list(block), program_ids=ids.tolist(), axes=axes)
        )
    return found


def unwritten(out: OutputWrites) -> int:
    """The number of ``out``'s elements that no grid point's block covers."""
    return int(np.prod(out.shape, dtype=np.int64)) - _covered(out.shape, out.ranges)


def _revisited_later(
    out: OutputWrites, found: Sequence[PallasRevisit]
) -> tuple[tuple[int, ...], tuple[tuple[int, ...], tuple[int, ...]]] | None:
    """The first revisited block whose writers are not consecutive grid points (in the grid's
    order, the rows of ``out.blocks``): the block and the two writers a gap separates."""
    # each block's rows, in one pass over the grid (a grid of 65,536 points has thousands of
    # revisited blocks: a scan per block would be quadratic)
    rows_of: dict[tuple[int, ...], list[int]] = {}
    for p, b in enumerate(out.blocks.tolist()):
        rows_of.setdefault(tuple(b), []).append(p)
    for r in found:
        rows = rows_of.get(tuple(r.block), [])
        for i, (p, q) in enumerate(itertools.pairwise(rows)):
            if q != p + 1:
                return tuple(r.block), (tuple(r.program_ids[i]), tuple(r.program_ids[i + 1]))
    return None


def _axes_text(axes: Sequence[int]) -> str:
    return ", ".join(str(a) for a in axes)


def judge(
    out: OutputWrites,
    found: Sequence[PallasRevisit],
    missing: int,
    semantics: Sequence[str] | None,
) -> tuple[list[PallasCallFinding], list[str]]:
    """The findings and notes for one output.

    - ``race``: writers of one block differ along an axis declared parallel: those program
      instances may run at the same time, and which write lands is not defined.
    - ``overwrite``: otherwise, when the kernel writes the output ref at its top level and never
      reads it: each writer replaces the block the previous one wrote (a grid that runs in
      order, as interpret mode's, returns the last writer's block; on a GPU, where every grid
      point is its own program, they race).
    - ``revisited_later``: otherwise, a kernel that may read the block comes back to it after
      other blocks (writers not on consecutive grid points), unless its BlockSpec asks
      ``pl.RevisitMode.ANY``: the block's buffer is then undefined.
    - otherwise a revisit is a note: a kernel that reads the block it writes (accumulating over
      an axis) or writes it under a condition (``pl.when``) is correct where that axis runs in
      order (``arbitrary``).
    - ``unwritten``: elements of the output that no block covers."""
    findings: list[PallasCallFinding] = []
    notes: list[str] = []
    if found:
        # the first revisit along a parallel axis, if any: that one is a race
        racing = [
            r
            for r in found
            if any(semantics is not None and semantics[a] in PARALLEL for a in r.axes)
        ]
        first = racing[0] if racing else found[0]
        more = f" ({len(found)} blocks in all)" if len(found) > 1 else ""
        who = " and ".join(str(tuple(p)) for p in first.program_ids[:2])
        if len(first.program_ids) > 2:
            who += f" and {len(first.program_ids) - 2} more"
        head = (
            f"output {out.index}'s block {tuple(first.block)} is written by program instances "
            f"{who}{more}"
        )
        if racing:
            assert semantics is not None
            parallel = [a for a in first.axes if semantics[a] in PARALLEL]
            findings.append(
                PallasCallFinding(
                    kind="race",
                    operand=out.operand,
                    message=f"{head}, which differ along grid axis {_axes_text(parallel)}, "
                    "declared parallel: they may run at the same time, so which write lands is "
                    "not defined (interpret mode runs the grid in order and keeps the last)",
                )
            )
        elif out.written and not out.read:
            findings.append(
                PallasCallFinding(
                    kind="overwrite",
                    operand=out.operand,
                    message=f"{head}; the kernel writes the block without reading it, so each "
                    "writer replaces the previous one's values and only the last one's are "
                    "returned (on a GPU, where every grid point is its own program, they race)",
                )
            )
        elif (later := _revisited_later(out, found)) is not None and not out.revisit_any:
            block, (a, b) = later
            findings.append(
                PallasCallFinding(
                    kind="revisited_later",
                    operand=out.operand,
                    message=f"output {out.index}'s block {block} is written by program instance "
                    f"{a}, then by others, then again by {b}: the kernel may read the block it "
                    "writes (an accumulation), but an output block keeps its buffer only from "
                    "one grid point to the next (pl.RevisitMode.IMMEDIATE, the default); coming "
                    "back to it later, the buffer is undefined (interpret mode works on the whole "
                    "output and does not show it). Visit each output block on consecutive grid "
                    "points (the reduction axis last), or give its BlockSpec pipeline_mode="
                    "pl.Buffered(2, revisit=pl.RevisitMode.ANY)",
                )
            )
        else:
            notes.append(
                f"{head} along grid axis {_axes_text(first.axes)}: the kernel may read the block "
                "it writes (an accumulation), which is correct only where that axis runs in "
                "order (dimension_semantics 'arbitrary')"
            )
    if missing and out.aliased:
        notes.append(
            f"{missing} elements of output {out.index} are in no block any program instance "
            "writes: input_output_aliases gives it an input's buffer, so they keep its values"
        )
    elif missing:
        total = int(np.prod(out.shape, dtype=np.int64))
        findings.append(
            PallasCallFinding(
                kind="unwritten",
                operand=out.operand,
                message=f"{missing} of output {out.index}'s {total} elements are in no block "
                "any program instance writes: their values are whatever the output buffer "
                "held (interpret mode fills floats with NaN, integers with their minimum)",
            )
        )
    return findings, notes


def out_of_bounds(
    operand: int,
    name: str,
    block: Sequence[PallasBlockDim],
    shape: Sequence[int],
    indices: np.ndarray,
    program_ids: np.ndarray,
) -> PallasCallFinding | None:
    """The finding for the grid points whose block of this operand starts outside the array
    (``indices``: its block indices, one row per grid point): interpret mode slices with
    ``lax.dynamic_slice``, which clamps the start, so such an instance silently reads or writes
    the last block instead."""
    starts = (
        np.stack(
            [
                indices[:, d] * (dim.size if dim.kind == "blocked" else 1)
                for d, dim in enumerate(block)
            ],
            axis=1,
        )
        if len(block)
        else np.zeros((len(indices), 0), np.int64)
    )
    bad = ((starts < 0) | (starts >= np.asarray(shape, dtype=np.int64))).any(axis=1)
    if not bad.any():
        return None
    p = int(np.argmax(bad))
    count = int(bad.sum())
    more = f" ({count} program instances in all)" if count > 1 else ""
    return PallasCallFinding(
        kind="out_of_bounds",
        operand=operand,
        message=f"program instance {tuple(program_ids[p].tolist())} gets block "
        f"{tuple(indices[p].tolist())} of {name}, which starts at element "
        f"{tuple(starts[p].tolist())}, outside its shape {tuple(shape)}{more}: interpret mode "
        "clamps the slice's start, so the instance reads or writes the array's last block "
        "instead; compiled, the access is out of bounds",
    )
