"""The Run station on an accelerator: the compiled program profiled per HLO instruction
(design 0073). The record comes from ``jaxscope.internals.device_profile`` (through
``exhibit_api.program_profile``); this module makes the :class:`ProgramProfiled` event of it,
each instruction linked back to the jaxpr and the user's line through the compiled module's
:class:`HloLink` of that instruction."""

from __future__ import annotations

import statistics
from typing import Any

from exhibits.stations.events import (
    HloLink,
    InstructionTime,
    MemoryPeak,
    PeakBuffer,
    ProgramProfiled,
)

CAVEATS = (
    "measured: each instruction's executions in a jax.profiler trace of the calls, summed per "
    "call; the trace's own timestamps (the chip's clock)",
    "estimated: FLOPs and bytes are XLA's HloCostAnalysis of each instruction cut out of the "
    "optimized module, run by the {client} client (the TPU's PJRT plugin offers no per-module "
    "analysis): logical shape sizes, without the TPU's tile padding",
    "roofline: the larger of the FLOPs at the chip's peak bf16 rate and the HBM bytes (operands "
    "and outputs not in VMEM, S(1)) at its peak HBM bandwidth; the DMAs that move data between "
    "HBM and VMEM are instructions of their own (copy-start/copy-done)",
)


def program_profiled(record: Any, links: list[HloLink]) -> ProgramProfiled:
    """The event of a ``ProgramProfileRecord``, its instructions linked by name to ``links``
    (the compiled module's instruction lines)."""
    by_name = {link.instruction: link for link in links}
    rows = []
    for r in record.instructions:
        link = by_name.get(r.instruction)
        cost, line = r.cost, r.roofline
        rows.append(
            InstructionTime(
                instruction=r.instruction,
                opcode=link.opcode if link else None,
                line=link.line if link else None,
                op_name=link.op_name if link else None,
                source=link.source if link else None,
                eqn_indices=list(link.eqn_indices) if link else [],
                per_call=r.per_call,
                measured_ns=r.measured_ns,
                durations_ns=list(r.durations_ns),
                flops=cost.flops if cost else None,
                bytes_accessed=cost.bytes_accessed if cost else None,
                hbm_bytes=cost.hbm_bytes if cost else None,
                transcendentals=cost.transcendentals if cost else None,
                compute_ns=line.compute_ns if line else None,
                memory_ns=line.memory_ns if line else None,
                bound_ns=line.bound_ns if line else None,
                bound_by=line.bound_by if line else None,
                intensity=line.intensity if line else None,
                fraction=line.fraction if line else None,
            )
        )
    peaks = record.peaks
    return ProgramProfiled(
        device_kind=record.device_kind,
        plane=record.plane,
        module=record.module,
        calls=record.calls,
        runs_ns=list(record.runs_ns),
        step_ns=statistics.median(record.runs_ns) if record.runs_ns else None,
        ops_ns=sum(r.measured_ns for r in record.instructions),
        peak_flops=peaks[0] if peaks else None,
        peak_bytes=peaks[1] if peaks else None,
        peaks_source=peaks[2] if peaks else None,
        trace_peaks=dict(record.trace_peaks),
        cost_client=record.cost_client,
        caveats=[c.format(client=record.cost_client) for c in CAVEATS],
        instructions=rows,
    )


def memory_peak(record: Any, links: list[HloLink]) -> MemoryPeak:
    """The :class:`MemoryPeak` of a ``BufferPeakRecord``, each buffer linked by its
    instruction's name to ``links``."""
    by_name = {link.instruction: link for link in links}
    buffers = []
    for b in record.buffers:
        link = by_name.get(b.instruction)
        buffers.append(
            PeakBuffer(
                instruction=b.instruction,
                index=b.index,
                bytes=b.bytes,
                shape=b.shape,
                space=b.space,
                line=link.line if link else None,
                op_name=link.op_name if link else None,
                source=link.source if link else None,
                eqn_indices=list(link.eqn_indices) if link else [],
            )
        )
    return MemoryPeak(
        at=record.at,
        peak_by_space=dict(record.peak_by_space),
        space_totals=dict(record.space_totals),
        buffers=buffers,
    )
