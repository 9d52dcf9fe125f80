"""The seam exhibit's ``--print`` table.

``crossings``: a text table, one row per crossing of the ``ComputationClient`` boundary, step by
step, in the profiler's order: the step, the method, the direction (``host -> device``,
``device -> host``, ``on device``, ``host``), where in the loop (``upload``, ``f``, ``sync``,
``read``) and the snippet line, the metric sample (ms), the bytes for transfers, the trace span's
start and duration (ms from the step's trace start) and the PJRT spans inside it; then each
step's loss, and the methods cited at torch_xla's v2.9.0 tag. Imports only the protocol and this
exhibit's events.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from .events import SeamLoopFinished, SeamStepCrossed

DIRECTION = {
    "TransferToDevice": "host -> device",
    "TransferShardsToDevice": "host -> device",
    "Compile": "host",
    "ExecuteComputation": "on device",
    "ExecuteReplicated": "on device",
    "TransferFromDevice": "device -> host",
    "ReplicateShardedData": "on device",
}


def _ms(value: float | None, scale: float) -> str:
    return "" if value is None else f"{value / scale:.3f}"


def crossing_rows(events: Sequence[EventBase]) -> list[list[str]]:
    """The table's rows (strings), one per crossing."""
    rows = []
    for e in events:
        if not isinstance(e, SeamStepCrossed):
            continue
        for c in e.crossings:
            rows.append(
                [
                    str(e.step),
                    c.method,
                    DIRECTION[c.method],
                    c.phase + (f" line {c.line}" if c.line is not None else ""),
                    _ms(c.metric_ns, 1e6),
                    "" if c.bytes is None else str(c.bytes),
                    _ms(c.start_us, 1e3),
                    _ms(c.dur_us, 1e3),
                    ", ".join(dict.fromkeys(s.name for s in c.pjrt)),
                ]
            )
    return rows


HEADER = ["step", "method", "direction", "where", "metric ms", "bytes", "at ms", "span ms", "PJRT"]


def _crossings(events: Sequence[EventBase]) -> str | None:
    rows = crossing_rows(events)
    if not rows:
        return None
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
        for r in [HEADER, *rows]
    ]
    steps = [e for e in events if isinstance(e, SeamStepCrossed)]
    lines.append("")
    for e in steps:
        warn = "" if e.trace_ok else "  (the trace's spans differ from the metrics' counts)"
        gathered = e.metrics.replicate_sharded
        read = f", ReplicateShardedData x{gathered}" if gathered else ""
        lines.append(f"step {e.step}: loss {e.loss!r}{read}{warn}")
    ends = [e for e in events if isinstance(e, SeamLoopFinished)]
    if ends:
        lines.append("")
        for m in ends[-1].methods:
            lines.append(
                f"{'PjRt' if m.declared.startswith('pjrt_') else ''}ComputationClient::"
                f"{m.method} ({m.declared}; {m.defined}) calls {m.call} "
                f"({m.call_at}); metric {m.metric}"
            )
    return "\n".join(lines)


ARTEFACTS = {"crossings": _crossings}
