"""The stations exhibit's events: ``module_lowered`` (StableHLO, HLO and the op links back to
the jaxpr), ``executable_compiled`` (optimized HLO with its instructions linked back to the
jaxpr, cost and memory analysis) and ``program_executed`` (the outputs and timings on the
device).

The registry's ``stablehlo``/``hlo``/``compiled``/``cost``/``memory``/``output`` artefacts
read these classes from here.

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import ArrayPreview, EventBase, SourceLoc, WireModel
from pydantic import Field


class OpLink(WireModel):
    """A StableHLO op line linked back to the jaxpr and the user's source.

    ``line`` is the 0-based line index in :attr:`ModuleLowered.stablehlo`; ``op`` the op name
    (``stablehlo.sine``); ``name_stack`` the location name JAX attached (``jit(f)/sin``);
    ``source`` the user line from the op's debug location; ``eqn_indices`` the top-level eqns of
    the staged jaxpr lowered into this op (matched by user line and primitive).
    """

    line: int
    op: str
    name_stack: str | None = None
    source: SourceLoc | None = None
    eqn_indices: list[int] = []


class ModuleLowered(EventBase):
    """``Lowered``: ``stablehlo`` is ``Lowered.as_text()``; ``hlo`` is
    ``Lowered.as_text(dialect='hlo')``; ``op_links`` map StableHLO op lines to eqns and source
    via the debug locations of ``Lowered.as_text(debug_info=True)``."""

    # A program of thousands of eqns (loop_20k: 10.4 MB) is streamed to a page in ranges, its
    # texts cut after a newline (design 0045, "The stations' texts").
    ranged_lists = ("stablehlo", "hlo", "op_links")
    type: Literal["module_lowered"] = "module_lowered"
    stablehlo: str
    hlo: str
    op_links: list[OpLink]


class HloLink(WireModel):
    """An instruction line of the optimized HLO linked back to the jaxpr and the user's source.

    ``line`` is the 0-based line index in :attr:`ExecutableCompiled.compiled_text`;
    ``instruction`` the instruction's name (``sin.0``); ``opcode`` XLA's opcode (``sine``,
    ``fusion``); ``computation`` the computation it sits in (``fused_computation``, ``main.2``);
    ``op_name`` the name stack of its ``metadata`` (``jit(f)/sin``); ``source`` the innermost
    snippet frame of its ``stack_frame_id`` (line, column and function: XLA's end columns are
    shared by ops starting at one column, so none is given); ``eqn_indices`` the top-level
    eqns of the staged jaxpr it came from (matched like :class:`OpLink`'s); a fusion (or call)
    also counts for the eqns of the instructions in the computation it calls.
    """

    line: int
    instruction: str
    opcode: str
    computation: str
    op_name: str | None = None
    source: SourceLoc | None = None
    eqn_indices: list[int] = []


class PeakBuffer(WireModel):
    """A buffer live at the compiled program's memory peak (:class:`MemoryPeak`): the
    instruction that defines it and the tuple ``index`` of its value ("" for an array), its
    ``bytes``, ``shape`` with layout, and ``space`` (``default``: HBM on a TPU; ``vmem``,
    ``smem``: the layout's ``S(1)``, ``S(2)``); linked back as its :class:`HloLink` is."""

    instruction: str
    index: str
    bytes: int
    shape: str
    space: str
    line: int | None = None
    op_name: str | None = None
    source: SourceLoc | None = None
    eqn_indices: list[int] = []


class MemoryPeak(WireModel):
    """XLA's live-range peak of the compiled program (design 0073; read from its buffer
    assignment and live-range dumps): ``at`` the position in the schedule, ``peak_by_space``
    the bytes live there per memory space, ``space_totals`` every allocation's bytes per memory
    space (the memory-usage report), ``buffers`` those live at the peak, largest first."""

    at: int
    peak_by_space: dict[str, int]
    space_totals: dict[str, int]
    buffers: list[PeakBuffer]


class ExecutableCompiled(EventBase):
    """``Compiled``: ``compiled_text`` is ``Compiled.as_text()`` (optimized HLO);
    ``cost`` is ``Compiled.cost_analysis()`` (flops, transcendentals, bytes accessed, ...);
    ``memory`` the fields of ``Compiled.memory_analysis()`` in bytes; ``caveats`` say where
    those numbers are estimates or unavailable on this backend; ``hlo_links`` map the
    instruction lines of ``compiled_text`` to eqns and source via their ``metadata``."""

    ranged_lists = ("compiled_text", "hlo_links")
    type: Literal["executable_compiled"] = "executable_compiled"
    compiled_text: str
    cost: dict[str, float] | None
    memory: dict[str, int] | None
    caveats: list[str]
    hlo_links: list[HloLink] = []
    # Option ``target`` "tpu-v5e" (design 0067): the machine the program was compiled for
    # without running it ("TPU v5e") and the offline topology libtpu compiled it in ("v5e:2x2");
    # absent for a compile for the worker's own backend, which the Run station then runs.
    compiled_for: str | None = Field(
        default=None, exclude_if=lambda v: v is None, json_schema_extra={"x-wire-optional": True}
    )
    topology: str | None = Field(
        default=None, exclude_if=lambda v: v is None, json_schema_extra={"x-wire-optional": True}
    )
    # A compile for a TPU (the tpu-v5e target or the chip itself): the memory peak and the
    # buffers behind it (design 0073); absent elsewhere.
    memory_peak: MemoryPeak | None = Field(
        default=None, exclude_if=lambda v: v is None, json_schema_extra={"x-wire-optional": True}
    )


class ProgramExecuted(EventBase):
    """The compiled program ran on ``device``.

    ``dispatch_ms``: time until the call returned (async dispatch, no wait); ``blocked_ms``: time
    until ``block_until_ready`` returned for the same kind of call (median of ``repeats`` warm
    calls each); ``ready_after_dispatch``: ``is_ready()`` right after the first call returned;
    ``zeros_for``: the arguments given as ``jax.ShapeDtypeStruct`` (no values), by key path
    (``args[0]``, ``kwargs['w']``), which the program ran on as zeros of that shape and dtype.
    """

    type: Literal["program_executed"] = "program_executed"
    device: str
    platform: str
    outputs: list[ArrayPreview]
    dispatch_ms: float
    blocked_ms: float
    repeats: int
    ready_after_dispatch: bool
    zeros_for: list[str] = []


class InstructionTime(WireModel):
    """One HLO instruction of a profiled program (:class:`ProgramProfiled`), linked back as its
    :class:`HloLink` is (``line`` in ``compiled_text``, ``op_name``, ``source``, ``eqn_indices``;
    None/empty for an instruction with no metadata).

    Measured: ``durations_ns`` every execution in the trace (all calls, in order),
    ``per_call`` executions per call, ``measured_ns`` the durations summed over the calls
    divided by the calls. XLA's estimate (None where the cost analysis refused it): ``flops``,
    ``bytes_accessed``, ``transcendentals``; ``hbm_bytes`` the part of the bytes of operands and
    outputs whose layout is in the default memory space (on a TPU, HBM: no ``S(1)``, VMEM).
    The roofline against the chip's peaks (None without peaks): ``compute_ns`` = flops / peak
    FLOP/s, ``memory_ns`` = hbm_bytes / peak HBM bytes/s,
    ``bound_ns`` the larger (``bound_by`` says which), ``intensity`` FLOPs per byte,
    ``fraction`` = bound_ns / measured_ns (1: at the roofline)."""

    instruction: str
    opcode: str | None = None
    line: int | None = None
    op_name: str | None = None
    source: SourceLoc | None = None
    eqn_indices: list[int] = []
    per_call: float
    measured_ns: float
    durations_ns: list[float]
    flops: float | None = None
    bytes_accessed: float | None = None
    hbm_bytes: float | None = None
    transcendentals: float | None = None
    compute_ns: float | None = None
    memory_ns: float | None = None
    bound_ns: float | None = None
    bound_by: Literal["compute", "memory"] | None = None
    intensity: float | None = None
    fraction: float | None = None


class ProgramProfiled(EventBase):
    """The compiled program run ``calls`` more times under ``jax.profiler`` on an accelerator
    (design 0073): per executed HLO instruction its measured time beside XLA's cost estimate
    and its roofline.

    ``device_kind`` JAX's (``TPU v5 lite``); ``plane`` the trace's device plane
    (``/device:TPU:0``); ``module`` the HLO module's name; ``runs_ns`` each run's time on the
    device (the trace's ``XLA Modules`` events), ``step_ns`` their median; ``ops_ns`` the
    instructions' measured times summed (per call); ``peak_flops``/``peak_bytes`` the chip's
    published peaks (FLOP/s, bytes/s) and ``peaks_source`` where they are published;
    ``trace_peaks`` what the trace's device plane says of itself (``peak_teraflops_per_second``,
    ``peak_hbm_bw_gigabytes_per_second``...); ``cost_client`` the client whose HLO cost
    analysis estimated each instruction; ``instructions`` slowest first."""

    type: Literal["program_profiled"] = "program_profiled"
    device_kind: str
    plane: str
    module: str
    calls: int
    runs_ns: list[float]
    step_ns: float | None
    ops_ns: float
    peak_flops: float | None
    peak_bytes: float | None
    peaks_source: str | None
    trace_peaks: dict[str, float]
    cost_client: str
    caveats: list[str]
    instructions: list[InstructionTime]


class OutputValuesSent(EventBase):
    """Values of one output leaf of :class:`ProgramExecuted` whose preview is summarised
    (numpy's printout past 50 elements: ``...``), for a run that prints whole artefacts (the
    CLI's, ``details = "eager"``; issue 33, design 0060): ``jaxscope run stations --print
    output`` then prints every element. ``output``: the leaf's index in ``outputs`` (``path``
    its key path); ``start``/``count``: the elements carried, in row-major order (a leaf larger
    than 1 MiB comes in several events, in order); ``data``: their bytes in the leaf's own
    ``dtype``, little-endian, base64."""

    type: Literal["output_values_sent"] = "output_values_sent"
    output: int
    path: str
    dtype: str
    start: int
    count: int
    data: str


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    ModuleLowered,
    ExecutableCompiled,
    ProgramExecuted,
    OutputValuesSent,
    ProgramProfiled,
)
