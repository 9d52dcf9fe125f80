"""The stations exhibit's ``jaxscope run stations FILE --print ARTEFACT`` table: the last of
each station's texts (jaxpr, StableHLO, HLO, the compiled module, its cost and memory
analyses, the outputs), read from the run's events (imports only the events)."""

from __future__ import annotations

import base64
import json
import math
import sys
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import numpy as np
from jaxscope.exhibit_api import ArrayPreview, EventBase, JaxprStaged

from exhibits.digits import shortest
from exhibits.stations.events import (
    ExecutableCompiled,
    ModuleLowered,
    OutputValuesSent,
    ProgramExecuted,
    ProgramProfiled,
)

T = TypeVar("T")


def _last(events: Sequence[EventBase], kind: type[T]) -> T | None:
    found = [e for e in events if isinstance(e, kind)]
    return found[-1] if found else None


def _jaxpr(events: Sequence[EventBase]) -> str | None:
    e = _last(events, JaxprStaged)
    return e.jaxpr.text if e else None


def _stablehlo(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ModuleLowered)
    return e.stablehlo if e else None


def _hlo(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ModuleLowered)
    return e.hlo if e else None


def _compiled(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return e.compiled_text if e else None


def _cost(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return json.dumps(e.cost, indent=2, sort_keys=True) if e else None


def _memory(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ExecutableCompiled)
    return json.dumps(e.memory, indent=2, sort_keys=True) if e else None


def _output(events: Sequence[EventBase]) -> str | None:
    e = _last(events, ProgramExecuted)
    if e is None:
        return None
    whole = whole_outputs(e.outputs, events)
    lines = [
        f"{o.path or 'output'}: {o.dtype}{o.shape}\n{whole.get(i, o.preview)}"
        for i, o in enumerate(e.outputs)
    ]
    if e.zeros_for:
        note = ", ".join(e.zeros_for)
        lines.insert(0, f"# ran on zeros for {note} (ShapeDtypeStruct arguments have no values)")
    return "\n".join(lines)


def _memory_peak(events: Sequence[EventBase]) -> str | None:
    """A TPU compile's memory peak (design 0073): the bytes live at XLA's live-range peak per
    memory space, every allocation's per space, then the buffers live at the peak, largest
    first: bytes, memory space, shape, the instruction (and tuple index), its name stack and
    the user's line."""
    e = _last(events, ExecutableCompiled)
    if e is None or e.memory_peak is None:
        return None
    p = e.memory_peak
    by_space = ", ".join(f"{k} {v}" for k, v in sorted(p.peak_by_space.items()))
    totals = ", ".join(f"{k} {v}" for k, v in sorted(p.space_totals.items()))
    head = [
        f"# live at the peak (schedule position {p.at}), bytes by memory space: {by_space}",
        f"# every allocation, bytes by memory space: {totals}",
        "bytes\tspace\tshape\tinstruction\top_name\tsource",
    ]
    rows = [
        "\t".join(
            [
                str(b.bytes),
                b.space,
                b.shape,
                b.instruction + (f"{{{b.index}}}" if b.index else ""),
                b.op_name or "",
                f"line {b.source.line}" if b.source else "",
            ]
        )
        for b in p.buffers
    ]
    return "\n".join(head + rows)


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e3:.2f}"


def _profile(events: Sequence[EventBase]) -> str | None:
    """The accelerator's per-instruction profile (design 0073): a header with the step's time
    on the device, the instructions' sum and the peaks; then one row per instruction, slowest
    first: measured us per call, executions per call, XLA's FLOPs, bytes and HBM bytes, FLOPs
    per HBM byte,
    the roofline's us, its fraction of the measured time, what bounds it, the instruction,
    its name stack and the user's line."""
    e = _last(events, ProgramProfiled)
    if e is None:
        return None
    head = [
        f"# {e.device_kind} ({e.plane}), module {e.module}, {e.calls} calls profiled",
        f"# step on the device (median of the trace's module runs): {_us(e.step_ns)} us",
        f"# instructions summed: {_us(e.ops_ns)} us per call"
        + (f" ({e.ops_ns / e.step_ns:.1%} of the step)" if e.step_ns else ""),
    ]
    if e.peak_flops and e.peak_bytes:
        head.append(
            f"# peaks: {e.peak_flops / 1e12:g} TFLOP/s, {e.peak_bytes / 1e9:g} GB/s "
            f"({e.peaks_source}); ridge {e.peak_flops / e.peak_bytes:.0f} FLOP/byte"
        )
    if e.trace_peaks:
        said = ", ".join(f"{k} {v:g}" for k, v in sorted(e.trace_peaks.items()) if v)
        head.append(f"# the trace's device plane says: {said}")
    head += [f"# {c}" for c in e.caveats]
    head.append(
        "measured_us\tper_call\tflops\tbytes\thbm_bytes\tflop_per_hbm_byte\troofline_us\tof_measured"
        "\tbound_by\tinstruction\top_name\tsource"
    )
    rows = []
    for r in e.instructions:
        src = f"line {r.source.line}" if r.source else ""
        rows.append(
            "\t".join(
                [
                    _us(r.measured_ns),
                    f"{r.per_call:g}",
                    "-" if r.flops is None else f"{r.flops:.0f}",
                    "-" if r.bytes_accessed is None else f"{r.bytes_accessed:.0f}",
                    "-" if r.hbm_bytes is None else f"{r.hbm_bytes:.0f}",
                    "-" if r.intensity is None else f"{r.intensity:.2f}",
                    _us(r.bound_ns),
                    "-" if r.fraction is None else f"{r.fraction:.1%}",
                    r.bound_by or "-",
                    r.instruction,
                    r.op_name or "",
                    src,
                ]
            )
        )
    return "\n".join(head + rows)


def whole_outputs(outputs: Sequence[ArrayPreview], events: Sequence[EventBase]) -> dict[int, str]:
    """The printout of every output leaf whose preview is summarised, whole, from the run's
    :class:`OutputValuesSent` events (a run for the CLI sends them: design 0060), by output
    index: numpy's printout with every element, each float the shortest decimal that rounds
    back to it in its dtype (``floatmode="unique"``; bfloat16 and the float8s through
    ``exhibits.digits.shortest``). A leaf whose parts do not add up is left to its preview."""
    parts: dict[int, list[OutputValuesSent]] = {}
    for event in events:
        if isinstance(event, OutputValuesSent) and 0 <= event.output < len(outputs):
            parts.setdefault(event.output, []).append(event)
    out: dict[int, str] = {}
    for index, sent in parts.items():
        view = outputs[index]
        try:
            dtype = np.dtype(view.dtype)
        except TypeError:
            continue
        chunks = sorted(sent, key=lambda x: x.start)
        pieces = [np.frombuffer(base64.b64decode(x.data), dtype) for x in chunks]
        at = 0
        for x, piece in zip(chunks, pieces, strict=True):
            if x.start != at or piece.size != x.count:
                break
            at += x.count
        else:
            if at == math.prod(view.shape):
                out[index] = _printout(np.concatenate(pieces).reshape(view.shape))
    return out


def _printout(arr: np.ndarray) -> str:
    """numpy's printout of every element of ``arr``, as the preview's but never summarised."""
    with np.printoptions(threshold=sys.maxsize, linewidth=100, floatmode="unique"):
        if arr.dtype.kind in "biufc":
            return np.array2string(arr, separator=", ")
        name = str(arr.dtype)

        def one(v: object) -> str:  # an ml_dtypes float, in its own shortest digits
            return repr(shortest(float(cast(Any, v)), name))

        return np.array2string(arr, separator=", ", formatter={"all": one})


ARTEFACTS = {
    "jaxpr": _jaxpr,
    "stablehlo": _stablehlo,
    "hlo": _hlo,
    "compiled": _compiled,
    "cost": _cost,
    "memory": _memory,
    "output": _output,
    "profile": _profile,
    "memory_peak": _memory_peak,
}

# The artefacts a run makes only by running the program (the Run station's).
RUN_ARTEFACTS = ("output", "profile")


def _unavailable(artefact: str, options: object) -> str | None:
    """Why a run with ``options`` makes no ``artefact``, known before it runs (``jaxscope run``
    refuses it as a usage error): option ``target`` "tpu-v5e" compiles only (design 0067)."""
    if getattr(options, "target", None) == "tpu-v5e" and artefact in RUN_ARTEFACTS:
        made = ", ".join(a for a in ARTEFACTS if a not in RUN_ARTEFACTS)
        return (
            f"the TPU v5e target compiles only: nothing is run (no chip here), so there is no "
            f"{artefact!r}; this target prints {made} (or drop --target to run it here)"
        )
    return None


UNAVAILABLE = _unavailable
