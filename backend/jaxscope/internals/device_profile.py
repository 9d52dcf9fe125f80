"""Measured time per HLO instruction from a ``jax.profiler`` trace, beside XLA's cost estimate
of each instruction (issue 34, part 3; design 0073).

Sources:

* :func:`profile_calls` runs a compiled program under a profiler session and returns the
  session's ``XSpace`` (serialized protobuf bytes). It uses ``jaxlib``'s ``ProfilerSession``
  directly (what ``jax.profiler.start_trace``/``stop_trace`` wrap), so the trace never touches
  the disk; :class:`jax.profiler.ProfileData` (public) reads the bytes back.
* :func:`trace_ops` reads the XSpace: on a TPU, the events of the device plane
  (``/device:TPU:0``) in its lines ``XLA Ops`` (one event per HLO instruction executed, named by
  the instruction) and ``XLA Modules`` (one per program execution); on the CPU, the host's
  thunk events that carry an ``hlo_op`` stat (there is no module line: the CPU's are only for
  tests).
* :func:`instruction_costs` gives XLA's own ``HloCostAnalysis`` numbers per instruction: XLA
  exposes the analysis only for a whole module (``jaxlib._jax.hlo_module_cost_analysis``, what
  ``Compiled.cost_analysis`` reports), so each instruction is cut out of the optimized HLO into
  a module of its own (its operands become parameters, the computations it calls come along)
  and analysed with the device's client: a fusion's ``bytes accessed`` is then what crosses
  its boundary, as in the whole module's analysis. On a TPU the analysis also carries libtpu's
  ``optimal_seconds``.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import jax

# Instructions that never show in a trace as work of their own.
NO_WORK = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast"})

_HEADER_RE = re.compile(r"^(ENTRY )?%?([\w.\-]+) .*\{\s*$")
_INSTRUCTION_RE = re.compile(r"^\s+(ROOT )?%?([\w.\-]+) = (.*)$")
_CALLED_RE = re.compile(
    r"\b(?:calls|to_apply|body|condition|branch_computations|called_computations)="
    r"(\{[^}]*\}|%?[\w.\-]+)"
)
_CONTROL_RE = re.compile(r",?\s*control-predecessors=\{[^}]*\}")
_COMMENT_RE = re.compile(r"/\*.*?\*/")
# Metadata names stack frames of the whole module's index, which a cut-out module lacks.
_METADATA_RE = re.compile(r",\s*metadata=\{[^}]*\}")


@dataclass(frozen=True)
class TraceOp:
    """One executed instruction in a trace: its name, the module it ran in, start and
    duration in nanoseconds."""

    name: str
    module: str
    start_ns: float
    duration_ns: float


@dataclass(frozen=True)
class TraceRun:
    """One execution of a program on the device (TPU: the ``XLA Modules`` line)."""

    module: str
    start_ns: float
    duration_ns: float


@dataclass
class DeviceTrace:
    """What :func:`trace_ops` read: the device plane's name, its op and module events."""

    plane: str
    ops: list[TraceOp] = field(default_factory=list)
    runs: list[TraceRun] = field(default_factory=list)


@dataclass(frozen=True)
class OpCost:
    """XLA's cost analysis of one instruction cut out into a module of its own."""

    flops: float
    bytes_accessed: float
    transcendentals: float
    optimal_seconds: float | None
    # The part of ``bytes_accessed`` in the default memory space (HBM on a TPU): see
    # :func:`hbm_bytes`.
    hbm_bytes: float


def profile_calls(
    call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], calls: int
) -> bytes:
    """Run ``call(*args, **kwargs)`` ``calls`` times (each waited for) under a profiler session;
    the session's XSpace, serialized."""
    from jax._src.lib import _profiler

    session = _profiler.ProfilerSession()
    try:
        for _ in range(calls):
            jax.block_until_ready(call(*args, **kwargs))
    finally:
        xspace: bytes = session.stop()
    return xspace


def _stat(stats: Iterable[tuple[str, Any]], name: str) -> Any:
    for key, value in stats:
        if key == name:
            return value
    return None


def trace_ops(xspace: bytes) -> DeviceTrace:
    """The executed instructions and program runs of an XSpace (see the module docstring):
    a TPU's device plane when there is one, else the host's thunk events."""
    data = jax.profiler.ProfileData.from_serialized_xspace(xspace)
    planes = list(data.planes)
    device = [p for p in planes if p.name.startswith("/device:") and "TPU" in p.name]
    if device:
        plane = sorted(device, key=lambda p: p.name)[0]
        trace = DeviceTrace(plane=plane.name)
        for line in plane.lines:
            if line.name == "XLA Ops":
                for e in line.events:
                    module = _stat(e.stats, "hlo_module") or ""
                    trace.ops.append(TraceOp(e.name, str(module), e.start_ns, e.duration_ns))
            elif line.name == "XLA Modules":
                for e in line.events:
                    trace.runs.append(TraceRun(e.name, e.start_ns, e.duration_ns))
        return trace
    host = next((p for p in planes if p.name == "/host:CPU"), None)
    trace = DeviceTrace(plane=host.name if host else "")
    for line in host.lines if host else []:
        for e in line.events:
            stats = list(e.stats)
            op = _stat(stats, "hlo_op")
            if op is not None:
                module = str(_stat(stats, "hlo_module") or "")
                trace.ops.append(TraceOp(str(op), module, e.start_ns, e.duration_ns))
    return trace


@dataclass(frozen=True)
class OpTime:
    """One instruction's measured time: ``count`` executions in the trace, ``total_ns`` their
    summed durations."""

    name: str
    count: int
    total_ns: float


def op_times(ops: Iterable[TraceOp], module: str | None = None) -> list[OpTime]:
    """Per instruction name (of ``module`` when given, matched as a prefix of the trace's
    module name, which a TPU suffixes with the program id), its executions and summed time,
    in order of first execution."""
    found: dict[str, list[float]] = {}
    for op in ops:
        if module is not None and not op.module.startswith(module):
            continue
        found.setdefault(op.name, []).append(op.duration_ns)
    return [OpTime(name, len(d), sum(d)) for name, d in found.items()]


def median_run_ns(runs: Iterable[TraceRun], module: str | None = None) -> float | None:
    """The median duration of the program's runs on the device, or None with none traced."""
    d = [r.duration_ns for r in runs if module is None or r.module.startswith(module)]
    return statistics.median(d) if d else None


# ---- XLA's cost of each instruction ----------------------------------------------------------


@dataclass
class _Computation:
    name: str
    entry: bool
    header: str
    lines: list[str]


def _computations(text: str) -> list[_Computation]:
    out: list[_Computation] = []
    current: _Computation | None = None
    for line in text.splitlines():
        if current is None:
            m = _HEADER_RE.match(line)
            if m and not line.startswith("HloModule"):
                current = _Computation(m.group(2), bool(m.group(1)), line, [])
            continue
        if line == "}":
            out.append(current)
            current = None
        else:
            current.lines.append(line)
    return out


def _shape_and_rest(text: str) -> tuple[str, str]:
    """``text`` after ``%name = ``: its shape (a tuple shape kept whole) and the rest."""
    if text.startswith("("):
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                return text[: i + 1], text[i + 1 :].lstrip()
    shape, _, rest = text.partition(" ")
    return shape, rest


def _operands(rest: str) -> tuple[str, str, str]:
    """``opcode(operands), attrs`` split into the opcode, the operand text and the rest."""
    opcode, _, tail = rest.partition("(")
    depth = 1
    for i, ch in enumerate(tail):
        depth += ch in "({["
        depth -= ch in ")}]"
        if depth == 0:
            return opcode, tail[:i], tail[i + 1 :]
    return opcode, tail, ""


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "({["
        depth -= ch in ")}]"
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _called(line: str) -> list[str]:
    names: list[str] = []
    for m in _CALLED_RE.finditer(line):
        names += [n.strip().lstrip("%") for n in m.group(1).strip("{}").split(",") if n.strip()]
    return names


@dataclass
class _Module:
    """An optimized HLO module's text read once: its computations by name and, per instruction
    name, its computation, line and the shapes of the names defined before it there."""

    comps: list[_Computation]
    by_name: dict[str, _Computation]
    where: dict[str, tuple[_Computation, str, dict[str, str]]]


def _read_module(text: str) -> _Module:
    comps = _computations(text)
    where: dict[str, tuple[_Computation, str, dict[str, str]]] = {}
    for comp in comps:
        shapes: dict[str, str] = {}
        for line in comp.lines:
            m = _INSTRUCTION_RE.match(line)
            if m is None:
                continue
            shapes[m.group(2)] = _shape_and_rest(m.group(3))[0]
            where.setdefault(m.group(2), (comp, line, shapes))
    return _Module(comps, {c.name: c for c in comps}, where)


def wrapper_module(text: str | _Module, name: str) -> str | None:
    """An HLO module whose entry computes only instruction ``name`` of the optimized module
    ``text`` (its operands as parameters, the computations it calls copied in, in the module's
    order, metadata dropped); None when no such instruction is found."""
    wrapped = _wrap(_read_module(text) if isinstance(text, str) else text, name)
    return wrapped[0] if wrapped else None


def _wrap(module: _Module, name: str) -> tuple[str, list[str], str] | None:
    """:func:`wrapper_module`'s text, the operands' shapes and the instruction's shape."""
    if name not in module.where:
        return None
    _comp, line, shapes = module.where[name]
    m = _INSTRUCTION_RE.match(line)
    assert m is not None
    shape, rest = _shape_and_rest(m.group(3))
    opcode, operand_text, attrs = _operands(rest)
    operand_text = _COMMENT_RE.sub("", operand_text)
    params, args = [], []
    for i, operand in enumerate(_split_top(operand_text)):
        ref = operand.split()[-1].lstrip("%")
        if ref not in shapes:
            return None
        params.append(f"  p{i} = {shapes[ref]} parameter({i})")
        args.append(f"p{i}")
    needed: set[str] = set()
    todo = _called(line)
    while todo:
        c = todo.pop()
        if c in needed or c not in module.by_name:
            continue
        needed.add(c)
        for body in module.by_name[c].lines:
            todo += _called(body)
    attrs = _METADATA_RE.sub("", _CONTROL_RE.sub("", attrs))
    root = f"  ROOT {name} = {shape} {opcode}({', '.join(args)}){attrs}"
    parts = ["HloModule wrapped"]
    for comp in module.comps:
        if comp.name in needed:
            lines = [_METADATA_RE.sub("", x) for x in comp.lines]
            parts.append("\n".join([comp.header.replace("ENTRY ", ""), *lines, "}"]))
    parts.append("\n".join(["ENTRY wrapped_entry {", *params, root, "}"]))
    operand_shapes = [p.split(" = ", 1)[1].rsplit(" parameter(", 1)[0] for p in params]
    return "\n\n".join(parts) + "\n", operand_shapes, shape


_SPACE_RE = re.compile(r"S\((\d+)\)")


def _in_default_space(shape: str) -> bool:
    """Whether an array shape's layout puts it in memory space 0 (a TPU's HBM): no ``S(n)``
    with n > 0 in its layout (``f32[8,128]{1,0:T(8,128)S(1)}`` is in VMEM)."""
    return all(m == "0" for m in _SPACE_RE.findall(shape))


def _tuple_elements(shape: str) -> list[str]:
    return _split_top(shape[1:-1]) if shape.startswith("(") else [shape]


def hbm_bytes(cost: dict[str, Any], operands: list[str], out: str) -> float:
    """Of XLA's per-operand ``bytes accessed{i}{}`` and per-output ``bytes accessedout{j}``
    (``out{}`` for an array result), those of the operands and outputs whose layout is in the
    default memory space (:func:`_in_default_space`)."""
    total = 0.0
    for i, shape in enumerate(operands):
        if _in_default_space(shape):
            total += float(cost.get(f"bytes accessed{i}{{}}", 0.0))
    elements = _tuple_elements(out)
    if out.startswith("("):
        for j, shape in enumerate(elements):
            if _in_default_space(shape):
                total += float(cost.get(f"bytes accessedout{{{j}}}", 0.0))
    elif _in_default_space(out):
        total += float(cost.get("bytes accessedout{}", 0.0))
    return total


def instruction_costs(text: str, names: Iterable[str], client: Any) -> dict[str, OpCost]:
    """XLA's cost analysis (``client``'s) of each instruction of ``names`` in the optimized
    module ``text``, each cut out by :func:`wrapper_module`; an instruction the text parser or
    the analysis refuses is left out."""
    from jax._src.lib import _jax
    from jaxlib import _hlo  # type: ignore[attr-defined]

    read = _read_module(text)
    out: dict[str, OpCost] = {}
    for name in names:
        wrapped = _wrap(read, name)
        if wrapped is None:
            continue
        try:
            module = _hlo.hlo_module_from_text(wrapped[0])
            cost = _jax.hlo_module_cost_analysis(client, module)
        except Exception:
            continue
        optimal = cost.get("optimal_seconds")
        if cost.get("flops", 0.0) < 0 or cost.get("bytes accessed", 0.0) < 0:
            continue  # XLA's -1: it cannot cost this instruction (a custom call)
        out[name] = OpCost(
            flops=float(cost.get("flops", 0.0)),
            bytes_accessed=float(cost.get("bytes accessed", 0.0)),
            transcendentals=float(cost.get("transcendentals", 0.0)),
            optimal_seconds=float(optimal) if optimal is not None else None,
            hbm_bytes=hbm_bytes(cost, wrapped[1], wrapped[2]),
        )
    return out


# ---- The profile of a compiled program, per instruction, with its roofline ----------------

# The chips whose peaks the roofline is drawn against, by JAX's ``device_kind``: peak dense
# bf16 FLOP/s and HBM bytes/s, with where the numbers come from (design 0073).
PEAKS: dict[str, tuple[float, float, str]] = {
    "TPU v5 lite": (
        197e12,
        819e9,
        "Google Cloud TPU v5e system architecture (cloud.google.com/tpu/docs/v5e): "
        "197 TFLOP/s bf16, 819 GB/s HBM2 per chip",
    ),
}
# How many calls of the program the profiler records.
PROFILE_CALLS = 5
_NAME_RE = re.compile(r"^%?([\w.\-]+)")


@dataclass(frozen=True)
class Roofline:
    """One instruction against the chip's peaks: the time its FLOPs need at peak compute
    (``compute_ns``), its bytes at peak bandwidth (``memory_ns``); the roofline's time is the
    larger (``bound_ns``), which says what bounds it (``bound_by``); ``intensity`` is FLOPs per
    byte; ``fraction`` the roofline's time over the measured time (1: at the roofline)."""

    compute_ns: float
    memory_ns: float
    bound_ns: float
    bound_by: str
    intensity: float | None
    fraction: float | None


def roofline(
    flops: float, bytes_accessed: float, measured_ns: float, peak_flops: float, peak_bytes: float
) -> Roofline:
    """:class:`Roofline` of an instruction of ``flops`` and ``bytes_accessed`` that took
    ``measured_ns`` on a chip of peaks ``peak_flops`` FLOP/s and ``peak_bytes`` bytes/s."""
    compute = flops / peak_flops * 1e9
    memory = bytes_accessed / peak_bytes * 1e9
    bound = max(compute, memory)
    return Roofline(
        compute_ns=compute,
        memory_ns=memory,
        bound_ns=bound,
        bound_by="compute" if compute > memory else "memory",
        intensity=flops / bytes_accessed if bytes_accessed > 0 else None,
        fraction=bound / measured_ns if measured_ns > 0 else None,
    )


@dataclass(frozen=True)
class InstructionTimeRecord:
    """One HLO instruction of the profiled program: ``durations_ns`` every execution of it in
    the trace (all calls, in order), ``per_call`` executions per call, ``measured_ns`` its time
    per call (the durations summed over the calls); XLA's ``cost`` of it (None where the
    analysis refused it) and its ``roofline`` (None without peaks or cost)."""

    instruction: str
    per_call: float
    measured_ns: float
    durations_ns: list[float]
    cost: OpCost | None
    roofline: Roofline | None


@dataclass(frozen=True)
class ProgramProfileRecord:
    """A compiled program run ``calls`` times under ``jax.profiler``: ``plane`` the trace's
    device plane, ``runs_ns`` each run's time on the device (the TPU's ``XLA Modules`` line;
    empty on the CPU), ``instructions`` the executed instructions (slowest first), ``peaks``
    (FLOP/s, bytes/s, source) or None for a chip without them, ``trace_peaks`` the peaks the
    trace's device plane reports about itself (TFLOP/s and GB/s)."""

    device_kind: str
    plane: str
    module: str
    calls: int
    runs_ns: list[float]
    instructions: list[InstructionTimeRecord]
    peaks: tuple[float, float, str] | None
    trace_peaks: dict[str, float]
    cost_client: str


def _plane_peaks(xspace: bytes, plane_name: str) -> dict[str, float]:
    data = jax.profiler.ProfileData.from_serialized_xspace(xspace)
    for plane in data.planes:
        if plane.name == plane_name:
            out = {}
            for key, value in plane.stats:
                if key.startswith("peak_") and isinstance(value, (int, float, str)):
                    try:
                        out[key] = float(value)
                    except ValueError:
                        continue
            return out
    return {}


def program_profile(
    compiled: Any, args: tuple[Any, ...], kwargs: dict[str, Any], calls: int = PROFILE_CALLS
) -> ProgramProfileRecord:
    """Profile ``compiled`` (a ``jax.stages.Compiled``) over ``calls`` calls after a warm one:
    each executed instruction's measured time beside XLA's cost of it and its roofline.

    The instructions' costs come from XLA's ``HloCostAnalysis`` run by the CPU client on each
    instruction cut out of ``compiled.as_text()`` (:func:`instruction_costs`): the TPU's PJRT
    plugin does not offer a per-module analysis (``UNIMPLEMENTED: PJRT C API does not support
    GetHloCostAnalysis``), and the analysis is target-independent but for the byte sizes of
    shapes (logical sizes on the CPU; TPU tiling pads small dims)."""
    jax.block_until_ready(compiled(*args, **kwargs))
    xspace = profile_calls(compiled, args, kwargs, calls)
    trace = trace_ops(xspace)
    module = str(compiled.runtime_executable().hlo_modules()[0].name)
    runs = [r for r in trace.runs if r.module.startswith(module)]
    ops = trace.ops
    if runs:  # a TPU's ops carry no module: keep those inside the program's runs
        ops = [
            o
            for o in ops
            if any(r.start_ns <= o.start_ns < r.start_ns + r.duration_ns for r in runs)
        ]
    else:
        ops = [o for o in ops if o.module.startswith(module)]
    durations: dict[str, list[float]] = {}
    for op in ops:
        m = _NAME_RE.match(op.name)
        durations.setdefault(m.group(1) if m else op.name, []).append(op.duration_ns)
    device = jax.devices()[0]
    for leaf in jax.tree.leaves((args, kwargs)):
        if hasattr(leaf, "devices"):
            device = next(iter(leaf.devices()))
            break
    kind = str(device.device_kind)
    names = [n for n in durations if n not in NO_WORK]
    costs = instruction_costs(compiled.as_text(), names, jax.devices("cpu")[0].client)
    peaks = PEAKS.get(kind)
    rows = []
    for name, ds in durations.items():
        measured = sum(ds) / calls
        cost = costs.get(name)
        line = (
            roofline(cost.flops, cost.hbm_bytes, measured, peaks[0], peaks[1])
            if cost is not None and peaks is not None
            else None
        )
        rows.append(InstructionTimeRecord(name, len(ds) / calls, measured, ds, cost, line))
    rows.sort(key=lambda r: -r.measured_ns)
    return ProgramProfileRecord(
        device_kind=kind,
        plane=trace.plane,
        module=module,
        calls=calls,
        runs_ns=[r.duration_ns for r in runs],
        instructions=rows,
        peaks=peaks,
        trace_peaks=_plane_peaks(xspace, trace.plane),
        cost_client="cpu",
    )
