"""The seam exhibit's events (PyTorch/XLA track, design 0039): one training step's crossings of
torch_xla's ``ComputationClient`` boundary (``torch_xla/csrc/runtime/computation_client.h``,
implemented by ``PjRtComputationClient``), counted with ``torch_xla.debug.metrics`` and timed
with a ``torch_xla.debug.profiler`` trace of each step.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel

# The ComputationClient methods a step crosses: the TraceMe names of PjRtComputationClient
# without the class prefix, and the names torch_xla's metrics use for them.
# Under SPMD also TransferShardsToDevice (a span, no metric of its own: its one TransferToDevice
# posts the samples) and, cited only (no span: its counter), ReplicateShardedData.
Method = Literal[
    "TransferToDevice",
    "TransferShardsToDevice",
    "Compile",
    "ExecuteComputation",
    "ExecuteReplicated",
    "TransferFromDevice",
    "ReplicateShardedData",
]
# Where in the loop a crossing happened: the batch's ``.to(device)`` before ``f``, a line of
# ``f`` (or of a function the snippet defines), the loop's ``torch_xla.sync()`` after ``f``, the
# ``.item()`` of the loss ``f`` returned.
Phase = Literal["upload", "f", "sync", "read"]


class SeamSpan(WireModel):
    """A profiler span inside a crossing's span: ``name`` (a PJRT method's TraceMe name, e.g.
    ``PjRtCpuExecutable::ExecuteSharded``), ``start_us`` from the step's trace start, ``dur_us``."""

    name: str
    start_us: float
    dur_us: float


class SeamCrossing(WireModel):
    """One call of a ``ComputationClient`` method during a step.

    ``method``; ``phase``; ``line``: the snippet line that made it (for ``f``, the line running
    when the metric moved; for ``upload``, the ``args``/``batches`` line the batch comes from;
    for ``read``, the line of ``f``'s ``return``); None for the loop's sync. ``source``: that
    line's text or, for the loop's own statements, the statement. ``start_us``/``dur_us``: its
    ``PjRtComputationClient::<method>`` span in the step's profiler trace (µs from the trace's
    start), None where the trace has no span for it; ``thread``: the trace thread's name.
    ``pjrt``: the PJRT spans inside it (by time, any thread). ``metric_ns``: its sample of the
    method's time metric (``TransferToDeviceTime``, ``CompileTime``, ``ExecuteTime``,
    ``ExecuteReplicatedTime``, ``TransferFromDeviceTime``), when its phase (or line) had exactly
    one, else None; ``bytes``: for transfers, ``OutboundData``/``InboundData`` of the phase (or
    line) when it had exactly one sample."""

    method: Method
    phase: Phase
    line: int | None
    source: str
    start_us: float | None
    dur_us: float | None
    thread: str
    pjrt: list[SeamSpan]
    metric_ns: int | None
    bytes: int | None


class SeamMetricDelta(WireModel):
    """What one step added to torch_xla's metrics (``metric_data``: samples and their sum, ns or
    bytes; ``counter_value``), from before the batch's upload to after the loss's ``.item()``.
    ``replicate_sharded``: the ``ReplicateShardedData`` counter (SPMD: a sharded value read back;
    0 on one device, the default for streams recorded before it was read)."""

    to_device: int
    to_device_ns: int
    outbound_bytes: int
    compiles: int
    compile_ns: int
    uncached: int
    cached: int
    executions: int
    execute_ns: int
    replicated: int
    replicated_ns: int
    from_device: int
    from_device_ns: int
    inbound_bytes: int
    replicate_sharded: int = 0


class SeamStepCrossed(EventBase):
    """One training step on the XLA device: the batch moved with ``.to(device)``, ``f(*batch)``
    (each of its lines traced), ``torch_xla.sync()`` and ``xm.wait_device_ops()``, then
    ``.item()`` of the first tensor ``f`` returned.

    ``crossings``: in the order the profiler saw them (the metrics' order by phase where the
    trace has no span); ``metrics``: the step's deltas; ``loss``: the value ``.item()`` read;
    ``trace_ok``: the trace's span counts per method equal the metrics' sample counts;
    ``trace_us``: the step's trace length (µs); ``wall_ns``: the step's wall time."""

    type: Literal["seam_step_crossed"] = "seam_step_crossed"
    step: int
    crossings: list[SeamCrossing]
    metrics: SeamMetricDelta
    loss: float
    trace_ok: bool
    trace_us: float
    wall_ns: int


class SeamMethodCited(WireModel):
    """A ``ComputationClient`` method at torch_xla's v2.9.0 tag: its declaration
    (``computation_client.h:LINE``), its PJRT implementation (``pjrt_computation_client.cpp:LINE``)
    and the PJRT C++ API call it makes (``call``, at ``call_at``), the metric it times."""

    method: Method
    declared: str
    defined: str
    call: str
    call_at: str
    metric: str


class SeamLoopFinished(EventBase):
    """The loop's end: the losses (one per step), the methods cited, the device
    (``torch_xla.device()``), whether SPMD is on (``xr.is_spmd()``)."""

    type: Literal["seam_loop_finished"] = "seam_loop_finished"
    losses: list[float]
    methods: list[SeamMethodCited]
    device: str
    spmd: bool


EVENTS: tuple[type[EventBase], ...] = (SeamStepCrossed, SeamLoopFinished)
