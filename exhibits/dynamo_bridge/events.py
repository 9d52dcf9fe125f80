"""The dynamo_bridge exhibit's events (PyTorch/XLA track, design 0041): ``torch.compile(f,
backend="openxla")`` called a few times on the XLA device; the FX graphs dynamo hands over, the
XLA programs torch_xla's bridge (``torch_xla/_dynamo/dynamo_bridge.py``) compiles from them under
their graph hashes, each call's launches and metric deltas, and the regions in source order.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel


class FxNodeLine(WireModel):
    """One node of a dynamo FX graph: its ``name``, ``op`` (``placeholder``,
    ``call_function``, ``call_method``, ``output``...), ``target`` (``torch.sin``, ``sum``) and
    the snippet line its ``meta['stack_trace']`` names (None when it names none)."""

    name: str
    op: str
    target: str
    line: int | None


class DynamoGraphCaptured(EventBase):
    """One FX ``GraphModule`` dynamo handed to the backend, in the order dynamo handed them over.

    ``index``: 0-based; ``call``: the call of the compiled function during which dynamo made it;
    ``frame``: the code dynamo traced (``f``, or a resume function after a graph break:
    ``torch_dynamo_resume_in_f_at_10``); ``code``: ``gm.code`` (the Python FX generated);
    ``nodes``: its nodes with their snippet lines; ``reason``: dynamo's
    ``compile_subgraph_reason.reason``; ``graph_break``: whether the graph ended at a graph break
    (not at the function's return); ``break_line``/``break_text``: the snippet line of the break
    (the last snippet frame of the reason's ``user_stack``) and its text."""

    type: Literal["dynamo_graph_captured"] = "dynamo_graph_captured"
    index: int
    call: int
    frame: str
    code: str
    nodes: list[FxNodeLine]
    reason: str
    graph_break: bool
    break_line: int | None
    break_text: str


class DynamoCounterDelta(WireModel):
    """What one call added to torch_xla's metrics (after ``torch_xla.sync()`` and
    ``xm.wait_device_ops()``, minus the values before the call): the counters
    ``DynamoExtractCompiledGraph`` (``extracts``: graphs handed to ``extract_compiled_graph``)
    and ``UncachedCompile`` (``uncached``), the ``CompileTime`` samples and their sum
    (``compiles``, ``compile_ns``) and ``ExecuteTime``'s (``executions``, ``execute_ns``). Not
    ``CachedCompile``: the bridge's ``UnsupportedNodesCollector`` clears torch_xla's counters
    while it compiles and restores only these two (``dynamo_bridge.py:588``, ``:622-627``)."""

    extracts: int
    uncached: int
    compiles: int
    compile_ns: int
    executions: int
    execute_ns: int


class DynamoCallCounted(EventBase):
    """One call of the compiled function: ``call`` (0-based); ``graphs``: the FX graphs dynamo
    handed over during it (indices); ``compiled``: the graph hashes ``extract_graph_helper``
    computed during it (hex, one per XLA program compiled); ``launched``: the hashes
    ``_run_cached_graph`` ran, in order (one per XLA program run); ``counters``: the call's
    metric deltas; ``wall_ns``: the call and its sync."""

    type: Literal["dynamo_call_counted"] = "dynamo_call_counted"
    call: int
    graphs: list[int]
    compiled: list[str]
    launched: list[str]
    counters: DynamoCounterDelta
    wall_ns: int


class DynamoRegion(WireModel):
    """One stretch of the run in source order: ``kind`` ``xla`` (an XLA program the bridge
    compiled) or ``host`` (Python and CPU code between programs: a graph break, or an op the
    bridge left to the CPU). ``graph``: the FX graph it belongs to (for a graph break, the
    graph it ends); ``program``: the XLA program's index in compile order (None for host);
    ``graph_hash``: its hash (hex; '' for host); ``what``: its aten ops (xla), or the graph
    break's reason / the CPU op (host), prefixed ``backward: `` for the backward graph
    aot_autograd made for the FX graph (it runs from the host code at ``backward()``);
    ``lines``: the snippet lines it covers; ``code``: the aten FX code of the program
    (``xla``) as the bridge received it, or the host line's source."""

    kind: Literal["xla", "host"]
    graph: int
    program: int | None
    graph_hash: str
    what: str
    lines: list[int]
    code: str


class DynamoRegionsFound(EventBase):
    """The run's regions in source order (``regions``), after the calls."""

    type: Literal["dynamo_regions_found"] = "dynamo_regions_found"
    regions: list[DynamoRegion]


class DynamoOutputsCompared(EventBase):
    """The last call's outputs against eager CPU torch: ``outputs``
    (``float32[3,4]`` each), ``max_abs_diff`` over all of them, ``close``
    (``torch.allclose``, rtol 1e-4, atol 1e-5); ``values``: the first output's first 16 values
    (flattened; empty for a complex output); ``replayed_by_hash``: every hash
    ``_run_cached_graph`` launched was one ``extract_graph_helper`` computed."""

    type: Literal["dynamo_outputs_compared"] = "dynamo_outputs_compared"
    outputs: list[str]
    max_abs_diff: float
    close: bool
    values: list[float]
    replayed_by_hash: bool


EVENTS: tuple[type[EventBase], ...] = (
    DynamoGraphCaptured,
    DynamoCallCounted,
    DynamoRegionsFound,
    DynamoOutputsCompared,
)
