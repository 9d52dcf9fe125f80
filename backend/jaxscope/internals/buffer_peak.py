"""The memory peak of a compiled program and the buffers live at it, from XLA's own buffer
assignment (issue 34, part 3; design 0073).

``Compiled.memory_analysis()`` gives totals (arguments, outputs, temporaries); which buffers
make the peak is only in XLA's dumps: compiling with the debug options ``xla_dump_to`` and
``xla_dump_hlo_as_text`` (passed as ``Lowered.compile(compiler_options)``, so only this compile
dumps) writes, beside the HLO, ``*-buffer-assignment.txt`` (every allocation and the values in
it, each with its shape and layout, whose ``S(n)`` names the memory space: on a TPU 1 is VMEM,
2 SMEM, none HBM), ``*-live-range.txt`` (the schedule, each buffer's live range and "Live
ranges at N (peak)": the buffers live at the peak with their sizes) and
``*-memory-usage-report.txt`` (totals per memory space). This module compiles so into a
temporary folder, reads those three files and removes the folder. The files are XLA's text
dumps, not an API: a line it cannot read is skipped.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PEAK_RE = re.compile(r"^\s*Live ranges at (\d+) \(peak\):")
_LIVE_RE = re.compile(r"^\s+([\w.\-]+)\{([\d,]*)\}: (\d+) bytes")
_VALUE_RE = re.compile(
    r"^\s*value: <\d+ ([\w.\-]+)(?:\{([\d,]*)\})? @\d+> \(size=\d+,offset=\d+\): (.*)$"
)
_SPACE_RE = re.compile(r"^Memory Space: (\S+) \(color=(\d+)\)")
_TOTAL_RE = re.compile(r"^Total bytes: (\d+)")
_S_RE = re.compile(r"S\((\d+)\)")
# The memory spaces of a TPU layout's S(n), by n (XLA's memory-usage report names them so).
SPACES = {0: "default", 1: "vmem", 2: "smem"}


@dataclass(frozen=True)
class PeakBufferRecord:
    """A buffer live at the peak: the instruction that defines it and the tuple ``index`` of
    its value ("" for an array), its ``bytes``, ``shape`` (with layout) and memory ``space``."""

    instruction: str
    index: str
    bytes: int
    shape: str
    space: str


@dataclass
class BufferPeakRecord:
    """XLA's live-range peak: schedule position ``at``, the ``buffers`` live there (largest
    first), their bytes by memory space (``peak_by_space``), and the totals the memory-usage
    report gives per memory space (``space_totals``: every allocation, not only the peak's)."""

    at: int
    buffers: list[PeakBufferRecord] = field(default_factory=list)
    peak_by_space: dict[str, int] = field(default_factory=dict)
    space_totals: dict[str, int] = field(default_factory=dict)


def _space(shape: str) -> str:
    found = {int(n) for n in _S_RE.findall(shape)} or {0}
    n = max(found)
    return SPACES.get(n, f"color_{n}")


def read_dump(folder: Path) -> BufferPeakRecord | None:
    """The :class:`BufferPeakRecord` of the first module dumped in ``folder`` that has a
    live-range file (None when there is none or it names no peak)."""
    live = sorted(folder.glob("*after_optimizations-live-range.txt"))
    if not live:
        return None
    prefix = live[0].name.removesuffix("-live-range.txt")
    shapes: dict[tuple[str, str], str] = {}
    assignment = folder / f"{prefix}-buffer-assignment.txt"
    if assignment.exists():
        for line in assignment.read_text().splitlines():
            if m := _VALUE_RE.match(line):
                shapes.setdefault((m.group(1), m.group(2) or ""), m.group(3).strip())
    record: BufferPeakRecord | None = None
    for line in live[0].read_text().splitlines():
        if m := _PEAK_RE.match(line):
            record = BufferPeakRecord(at=int(m.group(1)))
            continue
        if record is None:
            continue
        m = _LIVE_RE.match(line)
        if m is None:
            if record.buffers:
                break
            continue
        shape = shapes.get((m.group(1), m.group(2)), "")
        buf = PeakBufferRecord(m.group(1), m.group(2), int(m.group(3)), shape, _space(shape))
        record.buffers.append(buf)
        record.peak_by_space[buf.space] = record.peak_by_space.get(buf.space, 0) + buf.bytes
    if record is None:
        return None
    record.buffers.sort(key=lambda b: -b.bytes)
    report = folder / f"{prefix}-memory-usage-report.txt"
    if report.exists():
        space = None
        for line in report.read_text().splitlines():
            if m := _SPACE_RE.match(line):
                space = m.group(1)
            elif (t := _TOTAL_RE.match(line)) and space is not None:
                record.space_totals[space] = int(t.group(1))
                space = None
    return record


def compile_with_peak(lowered: Any) -> tuple[Any, BufferPeakRecord | None]:
    """``lowered.compile()`` with XLA's dumps on (into a temporary folder, removed after):
    the compiled program and its :class:`BufferPeakRecord` (None where the dumps have none)."""
    folder = Path(tempfile.mkdtemp(prefix="jaxscope-xla-dump-"))
    try:
        compiled = lowered.compile({"xla_dump_to": str(folder), "xla_dump_hlo_as_text": True})
        return compiled, read_dump(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
