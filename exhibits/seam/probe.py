"""The seam exhibit's probe (PyTorch/XLA track; runs in a torch worker, design 0039).

The snippet is a training step: ``f(*args)`` does one step (forward, backward, update) and
returns the loss; ``args`` are CPU tensors; optional ``steps`` (how many steps, default 3). Its
modules and module-level tensors are moved to the XLA device in place, as in the xla_cache probe.
Each step, as a training loop does it: the batch's ``.to(device)``, ``f(*batch)``,
``torch_xla.sync()`` (and ``xm.wait_device_ops()``: execution is asynchronous, its metric
sample lands when it ends), then ``.item()`` of the first tensor ``f`` returned.

Two instruments watch the ``ComputationClient`` boundary (``PjRtComputationClient`` at v2.9.0):
``torch_xla.debug.metrics`` (each method's time metric, one sample per call, and the
``OutboundData``/``InboundData`` byte metrics), read before and after each phase and, inside
``f``, at each line of the snippet's frames (``sys.settrace``); and a
``torch_xla.debug.profiler`` trace of the step (``start_trace``/``stop_trace``: a local profiler
session, written as ``vm.trace.json.gz`` under a private temporary folder), whose
``PjRtComputationClient::<method>`` spans give each call's order, start and duration, and the
PJRT spans inside it. Public torch/torch_xla API only.
"""

from __future__ import annotations

import glob
import gzip
import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from types import FrameType
from typing import Any

from jaxscope.exhibit_api import (
    SNIPPET_FILENAME,
    InvalidSnippet,
    ProbeContext,
    blame_line,
    move_state,
    setting_line,
    source_lines,
)
from jaxscope.exhibit_api import torch_internals as ti

from .events import (
    Phase,
    SeamCrossing,
    SeamLoopFinished,
    SeamMethodCited,
    SeamMetricDelta,
    SeamSpan,
    SeamStepCrossed,
)

DEFAULT_STEPS = 3
MAX_STEPS = 8
MAX_DEVICES = 8

# Each method's time metric (computation_client.cpp at v2.9.0: TransferToDeviceMetric and
# friends), one sample per call.
TIME_METRIC = {
    "TransferToDevice": "TransferToDeviceTime",
    "Compile": "CompileTime",
    "ExecuteComputation": "ExecuteTime",
    "ExecuteReplicated": "ExecuteReplicatedTime",
    "TransferFromDevice": "TransferFromDeviceTime",
}
# The byte metrics the transfers post, one sample per call (the call's total bytes).
BYTES_METRIC = {"TransferToDevice": "OutboundData", "TransferFromDevice": "InboundData"}
# Under SPMD: TransferShardsToDevice has a TraceMe span but no metric of its own (its one
# TransferToDevice call posts the samples); ReplicateShardedData (PjRtComputationClient only,
# reached from TransferFromDevice of sharded data) has no span, only its counter.
SPAN_ONLY = ("TransferShardsToDevice",)
COUNTERS = ("UncachedCompile", "CachedCompile", "ReplicateShardedData")
METHODS = tuple(TIME_METRIC)
TRACE_PREFIX = "PjRtComputationClient::"

# Read in torch_xla's v2.9.0 tag (design 0039): the pure virtual method in
# torch_xla/csrc/runtime/computation_client.h, its PjRtComputationClient definition in
# pjrt_computation_client.cpp, and the PJRT C++ API call that definition makes.
CITED = (
    SeamMethodCited(
        method="TransferToDevice",
        declared="computation_client.h:300",
        defined="pjrt_computation_client.cpp:263",
        call="PjRtClient::BufferFromHostBuffer",
        call_at="pjrt_computation_client.cpp:278",
        metric="TransferToDeviceTime, OutboundData",
    ),
    SeamMethodCited(
        method="Compile",
        declared="computation_client.h:332",
        defined="pjrt_computation_client.cpp:542",
        call="PjRtClient::CompileAndLoad",
        call_at="pjrt_computation_client.cpp:650",
        metric="CompileTime",
    ),
    SeamMethodCited(
        method="ExecuteComputation",
        declared="computation_client.h:351",
        defined="pjrt_computation_client.cpp:729",
        call="PjRtLoadedExecutable::ExecuteSharded",
        call_at="pjrt_computation_client.cpp:777",
        metric="ExecuteTime",
    ),
    SeamMethodCited(
        method="ExecuteReplicated",
        declared="computation_client.h:362",
        defined="pjrt_computation_client.cpp:803",
        call="PjRtLoadedExecutable::Execute",
        call_at="pjrt_computation_client.cpp:880",
        metric="ExecuteReplicatedTime",
    ),
    SeamMethodCited(
        method="TransferShardsToDevice",
        declared="computation_client.h:311",
        defined="pjrt_computation_client.cpp:298",
        call="TransferToDevice (PjRtClient::BufferFromHostBuffer per shard)",
        call_at="pjrt_computation_client.cpp:309",
        metric="none of its own (its TransferToDevice's)",
    ),
    SeamMethodCited(
        method="ReplicateShardedData",
        declared="pjrt_computation_client.h:341",
        defined="pjrt_computation_client.cpp:341",
        call="Compile + ExecuteReplicated of an identity program",
        call_at="pjrt_computation_client.cpp:383",
        metric="ReplicateShardedData (counter)",
    ),
    SeamMethodCited(
        method="TransferFromDevice",
        declared="computation_client.h:323",
        defined="pjrt_computation_client.cpp:513",
        call="PjRtBuffer::ToLiteral",
        call_at="pjrt_computation_client.cpp:532",
        metric="TransferFromDeviceTime, InboundData",
    ),
)

# One metric's state: total samples, the accumulator, the retained (time, value) samples.
Metric = tuple[int, float, tuple[tuple[float, float], ...]]
Snapshot = dict[str, Metric]


def snapshot() -> Snapshot:
    """Every metric and counter the seam reads, from ``torch_xla.debug.metrics``."""
    import torch_xla.debug.metrics as met

    found: Snapshot = {}
    for name in [*TIME_METRIC.values(), *BYTES_METRIC.values()]:
        data = met.metric_data(name)
        found[name] = (int(data[0]), float(data[1]), tuple(data[2])) if data else (0, 0.0, ())
    for name in COUNTERS:
        found[name] = (int(met.counter_value(name) or 0), 0.0, ())
    return found


def new_samples(before: Snapshot, after: Snapshot, name: str) -> list[float]:
    """The values of the samples ``name`` got between two snapshots, oldest first (empty when
    the metric's sample window no longer holds them all)."""
    n = after[name][0] - before[name][0]
    if n <= 0:
        return []
    kept = sorted(after[name][2])
    return [v for _, v in kept[-n:]] if len(kept) >= n else []


def method_samples(
    before: Snapshot, after: Snapshot
) -> dict[str, tuple[int, list[float], list[float]]]:
    """Per method: how many calls the metrics counted between two snapshots, their time samples
    (ns) and, for transfers, their byte samples, oldest first."""
    found = {}
    for method, metric in TIME_METRIC.items():
        n = after[metric][0] - before[metric][0]
        sizes = new_samples(before, after, BYTES_METRIC[method]) if method in BYTES_METRIC else []
        found[method] = (n, new_samples(before, after, metric), sizes)
    return found


# (Not "seam:": the trace export keeps only what follows a colon in "name:word".)
MARK = "seam-"
MAX_LINE_MARKS = 20_000


class Marks:
    """Marker spans in the step's profiler trace (``seam-upload``, ``seam-line-N``,
    ``seam-after-f``, ``seam-sync``, ``seam-read``), one open at a time: a crossing belongs to the
    marker open when its span starts (its call is made then, on whatever thread)."""

    def __init__(self) -> None:
        self.current: ti.TraceMe | None = None
        self.lines = 0

    def mark(self, label: str | None) -> None:
        if label is not None and label.startswith("line-"):
            # A loop in f makes a marker per line run: past MAX_LINE_MARKS, one "lines" marker.
            self.lines += 1
            if self.lines > MAX_LINE_MARKS:
                if self.lines > MAX_LINE_MARKS + 1:
                    return
                label = "lines"
        if self.current is not None:
            self.current.stop()
            self.current = None
        if label is not None:
            self.current = ti.TraceMe(MARK + label)
            self.current.start()


@contextmanager
def line_marks(marks: Marks, returned: list[int]) -> Iterator[None]:
    """While active, open a ``seam-line-N`` marker whenever a line of a snippet frame starts
    (the innermost snippet line runs: work in torch's own code, even between two snippet frames,
    counts for the snippet line that called it), and ``seam-after-f`` when the outermost
    snippet frame returns; ``returned`` gets that ``return``'s line."""
    stack: list[FrameType] = []

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            marks.mark(f"line-{frame.f_lineno}")
        elif event == "return":
            if stack and stack[-1] is frame:
                stack.pop()
            if stack:
                marks.mark(f"line-{stack[-1].f_lineno}")
            else:
                returned.append(frame.f_lineno)
                marks.mark("after-f")
        return local

    def outer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != SNIPPET_FILENAME or event != "call":
            return None
        stack.append(frame)
        marks.mark(f"line-{frame.f_lineno}")
        return local

    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        yield
    finally:
        sys.settrace(previous)


def read_trace(folder: str) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The complete (``ph == "X"``) events of the profiler's ``vm.trace.json.gz`` under
    ``folder`` (one capture) and the threads' names."""
    found = glob.glob(f"{folder}/plugins/profile/*/*.trace.json.gz")
    if not found:
        return [], {}
    with gzip.open(found[0], "rt") as fh:
        data = json.load(fh)
    events = [e for e in data.get("traceEvents", []) if e.get("ph") == "X"]
    threads = {
        int(e["tid"]): str(e["args"]["name"])
        for e in data.get("traceEvents", [])
        if e.get("ph") == "M" and e.get("name") == "thread_name" and "tid" in e
    }
    return events, threads


def where(
    label: str, lines: list[str], upload: tuple[int | None, str], returned: int | None
) -> tuple[Phase, int | None, str]:
    """A marker's phase, snippet line and source text."""
    if label.startswith("line-"):
        line = int(label.removeprefix("line-"))
        return "f", line, lines[line - 1].strip() if 0 < line <= len(lines) else ""
    if label == "upload":
        return "upload", upload[0], upload[1]
    if label == "lines":
        return "f", None, f"f, past its first {MAX_LINE_MARKS:,} lines run (not marked)"
    if label == "after-f":
        return "f", None, "the loop, after f returned"
    if label == "sync":
        return "sync", None, "the loop's torch_xla.sync()"
    at = f"line {returned}" if returned else "f"
    return "read", returned, f"the loop's .item() of the loss f returns ({at})"


def place(
    counted: dict[str, tuple[int, list[float], list[float]]],
    trace: list[dict[str, Any]],
    threads: dict[int, str],
    where_of: Callable[[str], tuple[Phase, int | None, str]],
) -> tuple[list[SeamCrossing], bool]:
    """The step's crossings in the order of their ``PjRtComputationClient::<method>`` spans,
    each placed by the marker open when it started (``where_of(label)``: phase, line, source)
    and given the i-th metric sample of its method (calls of one method finish in the order
    they start). ``ok``: every method had as many spans as the metrics counted."""
    spans: list[dict[str, Any]] = []
    for e in trace:
        name = str(e.get("name", ""))
        traced = name[len(TRACE_PREFIX) :]
        if name.startswith(TRACE_PREFIX) and (traced in TIME_METRIC or traced in SPAN_ONLY):
            spans.append(e)
    spans.sort(key=lambda e: float(e["ts"]))
    markers = sorted(
        (e for e in trace if str(e.get("name", "")).startswith(MARK)), key=lambda e: float(e["ts"])
    )
    inner = sorted(
        (
            e
            for e in trace
            if "PjRt" in str(e.get("name", "")) and not str(e["name"]).startswith(TRACE_PREFIX)
        ),
        key=lambda e: float(e["ts"]),
    )
    ok = all(
        n == sum(str(s["name"]) == TRACE_PREFIX + m for s in spans)
        for m, (n, _, _) in counted.items()
    )
    seen = {m: 0 for m in [*TIME_METRIC, *SPAN_ONLY]}
    out = []
    for span in spans:
        method = str(span["name"])[len(TRACE_PREFIX) :]
        i = seen[method]
        seen[method] += 1
        n, times, sizes = counted.get(method, (0, [], []))
        start, dur = float(span["ts"]), float(span.get("dur", 0.0))
        before = [m for m in markers if float(m["ts"]) <= start]
        label = str(before[-1]["name"])[len(MARK) :] if before else "upload"
        phase, line, source = where_of(label)
        out.append(
            SeamCrossing(
                method=method,  # type: ignore[arg-type]
                phase=phase,
                line=line,
                source=source,
                start_us=start,
                dur_us=dur,
                thread=threads.get(int(span["tid"]), ""),
                pjrt=[
                    SeamSpan(name=str(e["name"]), start_us=float(e["ts"]), dur_us=float(e["dur"]))
                    for e in inner
                    if start <= float(e["ts"]) <= start + dur
                ],
                metric_ns=int(times[i]) if len(times) == n and i < n else None,
                bytes=int(sizes[i]) if len(sizes) == n and i < n else None,
            )
        )
    return out, ok


def step_delta(before: Snapshot, after: Snapshot) -> SeamMetricDelta:
    def n(name: str) -> int:
        return after[name][0] - before[name][0]

    def total(name: str) -> int:
        return round(after[name][1] - before[name][1])

    return SeamMetricDelta(
        to_device=n("TransferToDeviceTime"),
        to_device_ns=total("TransferToDeviceTime"),
        outbound_bytes=total("OutboundData"),
        compiles=n("CompileTime"),
        compile_ns=total("CompileTime"),
        uncached=n("UncachedCompile"),
        cached=n("CachedCompile"),
        replicate_sharded=n("ReplicateShardedData"),
        executions=n("ExecuteTime"),
        execute_ns=total("ExecuteTime"),
        replicated=n("ExecuteReplicatedTime"),
        replicated_ns=total("ExecuteReplicatedTime"),
        from_device=n("TransferFromDeviceTime"),
        from_device_ns=total("TransferFromDeviceTime"),
        inbound_bytes=total("InboundData"),
    )


def _steps(ns: dict[str, Any], source: str) -> int:
    steps = ns.get("steps", DEFAULT_STEPS)
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= MAX_STEPS:
        raise blame_line(
            InvalidSnippet(f"steps must be an int from 1 to {MAX_STEPS}, not {steps!r}"),
            setting_line(source, "steps"),
        )
    return steps


def _mesh_shape(ns: dict[str, Any], source: str) -> tuple[int, ...] | None:
    """The snippet's ``mesh_shape`` (SPMD on that many virtual CPU devices), or None."""
    shape = ns.get("mesh_shape")
    if shape is None:
        return None
    ok = (
        isinstance(shape, (tuple, list))
        and bool(shape)
        and all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)
    )
    if not ok or math.prod(shape) > MAX_DEVICES:
        raise blame_line(
            InvalidSnippet(
                f"mesh_shape must be a tuple of positive ints with at most {MAX_DEVICES} "
                f"devices in all, not {shape!r}"
            ),
            setting_line(source, "mesh_shape"),
        )
    return tuple(shape)


def start_spmd(mesh_shape: tuple[int, ...]) -> Any:
    """Create the client with ``CPU_NUM_DEVICES`` = the mesh's size, turn SPMD on and build
    the mesh (as the torch_spmd exhibit does)."""
    import numpy as np

    n = math.prod(mesh_shape)
    try:
        ti.set_client_env({"CPU_NUM_DEVICES": str(n)})
    except ti.ClientExists as exc:
        raise InvalidSnippet(
            f"{exc}: the snippet made an XLA tensor (or asked for a device) while it loaded; "
            f"with `mesh_shape` the exhibit creates the client with CPU_NUM_DEVICES={n}"
        ) from None
    import torch_xla.distributed.spmd as xs
    import torch_xla.runtime as xr

    xr.use_spmd()
    return xs.Mesh(np.arange(n), mesh_shape)


def first_tensor(outputs: Any, line: int | None) -> Any:
    """The first tensor ``f`` returned (the loss), or an error at ``f``'s return line."""
    import torch
    from torch.utils import _pytree as pytree

    leaves = [t for t in pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]
    if not leaves or leaves[0].numel() != 1:
        if not leaves:
            got = f"{type(outputs).__name__} with no tensor in it"
        elif leaves[0] is outputs:
            got = f"a tensor of shape {tuple(leaves[0].shape)}"
        else:
            got = f"{type(outputs).__name__} whose first tensor has shape {tuple(leaves[0].shape)}"
        raise blame_line(
            InvalidSnippet(
                "f must return the step's loss, a tensor of one element (or a tuple starting "
                f"with it), not {got}"
            ),
            line,
            "f",
        )
    return leaves[0]


def shard_batch(batch: Any, mesh: Any) -> None:
    """Under SPMD: each batch tensor's first dimension over the mesh's first axis
    (``xs.mark_sharding``, spec ``(0, None, ...)``); scalars stay replicated."""
    import torch
    import torch_xla.distributed.spmd as xs
    from torch.utils import _pytree as pytree

    for t in pytree.tree_leaves(batch):
        if isinstance(t, torch.Tensor) and t.dim() > 0:
            xs.mark_sharding(t, mesh, (0, *([None] * (t.dim() - 1))))


def run(ctx: ProbeContext) -> None:
    """Run ``steps`` training steps on the XLA device; emit each step's crossings, then the end."""
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.profiler as xp
    import torch_xla.runtime as xr
    from torch.utils import _pytree as pytree

    snippet = ctx.snippet
    f, ns, source = snippet.f, snippet.namespace, snippet.source
    batch = tuple(snippet.args)
    steps = _steps(ns, source)
    mesh_shape = _mesh_shape(ns, source)
    args_line = setting_line(source, "args")
    upload_source = "the loop's .to(device) of each tensor in args"
    with ctx.stage("client"):
        mesh = start_spmd(mesh_shape) if mesh_shape is not None else None
        device = torch_xla.device()  # creates the PJRT client (PJRT_DEVICE, in this run)
        move_state(f.__globals__, batch, device)
        torch_xla.sync()
        xm.wait_device_ops()
    lines = source_lines(source)
    losses: list[float] = []
    with ctx.stage("steps"):
        for step in range(steps):
            folder = tempfile.mkdtemp(prefix="seam-trace-")
            marks = Marks()
            returned: list[int] = []
            try:
                start = time.perf_counter_ns()
                xp.start_trace(folder)
                try:
                    first = snapshot()
                    marks.mark("upload")
                    moved_batch = pytree.tree_map(
                        lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch
                    )
                    if mesh is not None:
                        shard_batch(moved_batch, mesh)
                    with line_marks(marks, returned):
                        out = f(*moved_batch)
                    marks.mark("after-f")
                    loss = first_tensor(out, returned[-1] if returned else None)
                    marks.mark("sync")
                    torch_xla.sync()
                    xm.wait_device_ops()
                    marks.mark("read")
                    value = float(loss.item())
                    marks.mark(None)
                    last = snapshot()
                finally:
                    marks.mark(None)
                    xp.stop_trace()
                wall = time.perf_counter_ns() - start
                trace, threads = read_trace(folder)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            return_line = returned[-1] if returned else None
            crossings, ok = place(
                method_samples(first, last),
                trace,
                threads,
                partial(
                    where, lines=lines, upload=(args_line, upload_source), returned=return_line
                ),
            )
            losses.append(value)
            ends = [float(e["ts"]) + float(e.get("dur", 0.0)) for e in trace]
            ctx.emit(
                SeamStepCrossed(
                    step=step,
                    crossings=crossings,
                    metrics=step_delta(first, last),
                    loss=value,
                    trace_ok=ok,
                    trace_us=max(ends) if ends else 0.0,
                    wall_ns=wall,
                )
            )
    ctx.emit(
        SeamLoopFinished(
            losses=losses, methods=list(CITED), device=str(device), spmd=bool(xr.is_spmd())
        )
    )
