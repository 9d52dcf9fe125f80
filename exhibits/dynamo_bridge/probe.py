"""The dynamo_bridge exhibit's probe (PyTorch/XLA track; runs in a torch worker, design 0041).

The snippet's ``args`` are CPU tensors; the probe moves them (and the snippet's modules and
module-level tensors, in place) to the XLA device and calls
``torch.compile(f, backend=...)`` ``calls`` times (default 3), where the backend is a thin
recorder in front of the real ``openxla`` backend (``torch._dynamo.lookup_backend("openxla")``):
it records each FX ``GraphModule`` dynamo hands over (its code, its nodes' snippet lines, why
dynamo ended it) and hands it on unchanged. For the run, four functions of torch_xla's bridge
(``torch_xla/_dynamo/dynamo_bridge.py`` at v2.9.0) are wrapped as module attributes and put back
after: ``extract_compiled_graph`` (the aten graph aot_autograd hands the bridge, :670),
``partition_fx_graph_for_cpu_fallback`` (the graph cut around ops torch_xla cannot lower, :689),
``extract_internal`` (one XLA program per partition, :462) and ``extract_graph_helper`` (which
computes the program's graph hash and compiles it, :428-432); and ``_XLAC._run_cached_graph``
(each launch by hash, :552) through :mod:`jaxscope.torch_internals`. Each call's metric deltas
come from ``torch_xla.debug.metrics``. The last call's outputs are compared with eager CPU torch.

In the sandbox: dynamo compiles in this process (the openxla backend runs no inductor and starts
no compile workers); ``TORCHINDUCTOR_CACHE_DIR`` is the worker's private ``/tmp``
(``worker_env``).
"""

from __future__ import annotations

import operator
import re
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
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
    DynamoCallCounted,
    DynamoCounterDelta,
    DynamoGraphCaptured,
    DynamoOutputsCompared,
    DynamoRegion,
    DynamoRegionsFound,
    FxNodeLine,
)

DEFAULT_CALLS = 3
_VALUES = 16
_COUNTERS = ("DynamoExtractCompiledGraph", "UncachedCompile")
_METRICS = ("CompileTime", "ExecuteTime")
# A frame of a node's ``meta['stack_trace']`` in the snippet: ``File "<snippet>", line 9, in f``.
_SNIPPET_FRAME = re.compile(r'File "' + re.escape(SNIPPET_FILENAME) + r'", line (\d+)')


def counters() -> dict[str, tuple[int, int]]:
    """Each counter as (value, 0) and each metric as (samples, sum ns)."""
    import torch_xla.debug.metrics as met

    found = {name: (int(met.counter_value(name) or 0), 0) for name in _COUNTERS}
    for name in _METRICS:
        data = met.metric_data(name)
        found[name] = (int(data[0]), int(data[1])) if data else (0, 0)
    return found


def delta(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> DynamoCounterDelta:
    def d(name: str, i: int = 0) -> int:
        return after[name][i] - before[name][i]

    return DynamoCounterDelta(
        extracts=d("DynamoExtractCompiledGraph"),
        uncached=d("UncachedCompile"),
        compiles=d("CompileTime"),
        compile_ns=d("CompileTime", 1),
        executions=d("ExecuteTime"),
        execute_ns=d("ExecuteTime", 1),
    )


def snippet_line(stack_trace: str | None) -> int | None:
    """The last snippet line a node's ``meta['stack_trace']`` names (the innermost frame in
    the user's code), or None."""
    found = _SNIPPET_FRAME.findall(stack_trace or "")
    return int(found[-1]) if found else None


def _target(node: Any) -> str:
    target = node.target
    if isinstance(target, str):
        return target
    name = getattr(target, "__name__", None)
    module = getattr(target, "__module__", None)
    if module in ("torch", "torch._C._VariableFunctions") and name:
        return f"torch.{name}"
    if module == "_operator" and name:
        return f"operator.{name}"
    return str(target)


@dataclass
class Program:
    """One XLA program the bridge compiled: its aten FX code, ops and lines, its hash."""

    graph: int
    code: str
    ops: list[str]
    lines: list[int]
    graph_hash: str = ""


@dataclass
class BridgeRecord:
    """What the wrapped bridge saw, in order."""

    graphs: list[DynamoGraphCaptured] = field(default_factory=list)
    programs: list[Program] = field(default_factory=list)
    # Per FX graph: its forward layout after partitioning, ("xla", program) or ("host", op,
    # line); and the layout of the backward graph aot_autograd made for it, if the bridge got one.
    layouts: dict[int, list[tuple[str, Any, int | None]]] = field(default_factory=dict)
    backward_layouts: dict[int, list[tuple[str, Any, int | None]]] = field(default_factory=dict)
    computed: list[str] = field(default_factory=list)
    # The program each extract_internal closure compiled (id of the closure -> program).
    closures: dict[int, int] = field(default_factory=dict)
    current_graph: int = 0
    backward: bool = False

    def layout_of(self, backward: bool) -> dict[int, list[tuple[str, Any, int | None]]]:
        return self.backward_layouts if backward else self.layouts


def _aten_lines(gm: Any) -> tuple[list[str], list[int]]:
    ops: list[str] = []
    lines: list[int] = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        ops.append(_target(node))
        line = snippet_line(node.meta.get("stack_trace"))
        if line is not None and line not in lines:
            lines.append(line)
    return ops, sorted(lines)


@contextmanager
def _patched(module: Any, name: str, make: Callable[[Any], Any]) -> Iterator[None]:
    real = getattr(module, name)
    setattr(module, name, make(real))
    try:
        yield
    finally:
        setattr(module, name, real)


@contextmanager
def bridge_recorder(record: BridgeRecord) -> Iterator[list[str]]:
    """Wrap the bridge's functions for the block (both module objects: the backend calls
    ``torch_xla.core.dynamo_bridge``, a star-import copy of ``torch_xla._dynamo.dynamo_bridge``
    whose functions read the latter's globals); yield the launched hashes."""
    import torch_xla._dynamo.dynamo_bridge as bridge
    import torch_xla.core.dynamo_bridge as core_bridge

    def wrap_extract_compiled(real: Any) -> Any:
        def extract_compiled_graph(xla_model: Any, xla_args: Any) -> Any:
            # Forward graphs reach the bridge at their first run, in dynamo's order: the first
            # dynamo graph without one is this graph's. When every graph has one, this is the
            # backward graph aot_autograd made for the latest (compiled at its backward()).
            pending = [g.index for g in record.graphs if g.index not in record.layouts]
            record.backward = not pending and bool(record.graphs)
            record.current_graph = pending[0] if pending else max(len(record.graphs) - 1, 0)
            layouts = record.layout_of(record.backward)
            before = len(record.programs)
            compiled = real(xla_model, xla_args)
            if record.current_graph not in layouts:
                # No partitioning (symbolic ints among the inputs): one program.
                layouts[record.current_graph] = [
                    ("xla", i, None) for i in range(before, len(record.programs))
                ]
            return compiled

        return extract_compiled_graph

    def wrap_partition(real: Any) -> Any:
        def partition_fx_graph_for_cpu_fallback(*args: Any) -> Any:
            partitioned = real(*args)
            layout: list[tuple[str, Any, int | None]] = []
            for node in partitioned.graph.nodes:
                if node.op != "call_function" or node.target is operator.getitem:
                    continue
                program = record.closures.get(id(node.target))
                if program is not None:
                    layout.append(("xla", program, None))
                else:
                    line = snippet_line(node.meta.get("stack_trace"))
                    layout.append(("host", _target(node), line))
            record.layout_of(record.backward)[record.current_graph] = layout
            return partitioned

        return partition_fx_graph_for_cpu_fallback

    def wrap_internal(real: Any) -> Any:
        def extract_internal(xla_model: Any) -> Any:
            ops, lines = _aten_lines(xla_model)
            record.programs.append(
                Program(record.current_graph, xla_model.code.strip(), ops, lines)
            )
            index = len(record.programs) - 1
            compiled = real(xla_model)
            record.closures[id(compiled)] = index
            return compiled

        return extract_internal

    def wrap_helper(real: Any) -> Any:
        def extract_graph_helper(xla_model: Any, cache: Any) -> Any:
            found = real(xla_model, cache)
            graph_hash = bytes(found[2]).hex()
            record.computed.append(graph_hash)
            if record.programs and not record.programs[-1].graph_hash:
                record.programs[-1].graph_hash = graph_hash
            return found

        return extract_graph_helper

    with ExitStack() as stack:
        stack.enter_context(_patched(core_bridge, "extract_compiled_graph", wrap_extract_compiled))
        stack.enter_context(_patched(bridge, "extract_compiled_graph", wrap_extract_compiled))
        stack.enter_context(_patched(bridge, "partition_fx_graph_for_cpu_fallback", wrap_partition))
        stack.enter_context(_patched(bridge, "extract_internal", wrap_internal))
        stack.enter_context(_patched(bridge, "extract_graph_helper", wrap_helper))
        yield stack.enter_context(ti.cached_graph_runs())


def _break_site(reason: Any, source: list[str]) -> tuple[int | None, str]:
    frames = [f for f in (reason.user_stack or []) if isinstance(f, traceback.FrameSummary)]
    for frame in reversed(frames):
        if frame.filename == SNIPPET_FILENAME and frame.lineno:
            text = source[frame.lineno - 1].strip() if frame.lineno <= len(source) else ""
            return frame.lineno, text
    return None, ""


def recording_backend(
    record: BridgeRecord, source: list[str], call: Callable[[], int]
) -> Callable[..., Any]:
    """A dynamo backend that records each graph module and delegates to ``openxla``."""
    import torch._dynamo

    openxla = torch._dynamo.lookup_backend("openxla")

    def backend(gm: Any, example_inputs: Any) -> Any:
        reason = gm.compile_subgraph_reason
        line, text = _break_site(reason, source) if reason.graph_break else (None, "")
        nodes = [
            FxNodeLine(
                name=node.name,
                op=node.op,
                target=_target(node),
                line=snippet_line(node.meta.get("stack_trace")),
            )
            for node in gm.graph.nodes
        ]
        frame = ""
        for node in gm.graph.nodes:
            found = re.findall(r"line \d+, in (\S+)", node.meta.get("stack_trace") or "")
            if found:
                frame = found[-1]
                break
        record.graphs.append(
            DynamoGraphCaptured(
                index=len(record.graphs),
                call=call(),
                frame=frame,
                code=gm.code.strip(),
                nodes=nodes,
                reason=str(reason.reason),
                graph_break=bool(reason.graph_break),
                break_line=line,
                break_text=text,
            )
        )
        return openxla(gm, example_inputs)

    return backend


def regions(record: BridgeRecord) -> list[DynamoRegion]:
    """The run in source order: each FX graph's programs and CPU ops (its layout), then the
    graph break that ended it, if any, then its backward graph's programs (run from the host
    code, at ``backward()``)."""
    found: list[DynamoRegion] = []
    for graph in record.graphs:
        found += _layout_regions(record, graph.index, record.layouts.get(graph.index, []), "")
        if graph.graph_break:
            found.append(
                DynamoRegion(
                    kind="host",
                    graph=graph.index,
                    program=None,
                    graph_hash="",
                    what=f"graph break: {graph.reason.strip().splitlines()[0]}",
                    lines=[graph.break_line] if graph.break_line is not None else [],
                    code=graph.break_text,
                )
            )
        backward = record.backward_layouts.get(graph.index, [])
        found += _layout_regions(record, graph.index, backward, "backward: ")
    return found


def _layout_regions(
    record: BridgeRecord, graph: int, layout: list[tuple[str, Any, int | None]], prefix: str
) -> list[DynamoRegion]:
    """One FX graph's layout as regions: its XLA programs and the CPU ops between them."""
    found: list[DynamoRegion] = []
    for kind, what, line in layout:
        if kind == "xla":
            program = record.programs[what]
            found.append(
                DynamoRegion(
                    kind="xla",
                    graph=graph,
                    program=what,
                    graph_hash=program.graph_hash,
                    what=prefix + ", ".join(dict.fromkeys(program.ops)),
                    lines=program.lines,
                    code=program.code,
                )
            )
        else:
            found.append(
                DynamoRegion(
                    kind="host",
                    graph=graph,
                    program=None,
                    graph_hash="",
                    what=f"{prefix}CPU fallback: {what}",
                    lines=[line] if line is not None else [],
                    code="",
                )
            )
    return found


def _calls(ns: dict[str, Any], source: str) -> int:
    calls = ns.get("calls", DEFAULT_CALLS)
    if not isinstance(calls, int) or isinstance(calls, bool) or not 1 <= calls <= 16:
        raise blame_line(
            InvalidSnippet(f"calls must be an int from 1 to 16, not {calls!r}"),
            setting_line(source, "calls"),
        )
    return calls


def _tensors(value: Any) -> list[Any]:
    import torch
    from torch.utils import _pytree as pytree

    return [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def describe(t: Any) -> str:
    return f"{str(t.dtype).removeprefix('torch.')}[{','.join(map(str, t.shape))}]"


def compare(out: Any, expected: Any) -> tuple[list[str], float, bool, list[float]]:
    """The outputs' types, the largest absolute difference from eager CPU torch, whether they
    are close (same structure, ``torch.allclose``), and the first output's first values."""
    import torch

    got, want = _tensors(out), _tensors(expected)
    first = (
        [float(v) for v in got[0].detach().cpu().flatten()[:_VALUES].tolist()]
        if got and not got[0].is_complex()
        else []
    )
    worst = 0.0
    close = len(got) == len(want)
    for g, w in zip(got, want, strict=False):
        g = g.detach().cpu()
        w = w.detach()
        if g.shape != w.shape:
            close = False
            continue
        if g.numel():
            worst = max(worst, float((g - w).abs().max()))
        close = close and bool(torch.allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True))
    return [describe(t) for t in got], worst, close, first


def run(ctx: ProbeContext) -> None:
    """Call ``torch.compile(f, backend=openxla)`` ``calls`` times; emit the FX graphs, each
    call's launches and counters, the regions, and the outputs against eager CPU torch."""
    import torch
    import torch._dynamo
    import torch_xla
    import torch_xla.core.xla_model as xm
    from torch.utils import _pytree as pytree

    snippet = ctx.snippet
    f, source = snippet.f, snippet.source
    calls = _calls(snippet.namespace, source)
    lines = source_lines(source)
    args = tuple(snippet.args)
    with ctx.stage("client"):
        # The PJRT client first: autograd's engine sizes its device queues at the first
        # backward, and an f that calls backward() on the CPU first would leave none for XLA.
        device = torch_xla.device()  # creates the PJRT client (PJRT_DEVICE, in this run)
        # Eager CPU torch, the truth the outputs are held to. Under "force_eager" a
        # torch.compile the snippet made at module level (``compiled = torch.compile(model)``)
        # runs its module eagerly too: tracing it here would leave dynamo's guards holding
        # weak references to the CPU parameters, and swapping them onto the device below then
        # fails ("Cannot swap t1 because it has weakref associated with it"), an order a plain
        # script, which moves its model before the first compiled call, never meets.
        with torch.compiler.set_stance("force_eager"):
            expected = f(*args)
        # Detached, so that the CPU output's autograd graph (whose AccumulateGrad nodes hold
        # the parameters) is freed before the parameters are swapped onto the device.
        expected = pytree.tree_map(
            lambda x: x.detach() if isinstance(x, torch.Tensor) else x, expected
        )
        move_state(f.__globals__, pytree.tree_leaves(args), device)
        moved = pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, args)
        torch_xla.sync()  # the arguments are device data, not pending uploads
        xm.wait_device_ops()
    record = BridgeRecord()
    current = [0]
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=recording_backend(record, lines, lambda: current[0]))
    out: Any = None
    with ctx.stage("call"), bridge_recorder(record) as launched:
        for call in range(calls):
            current[0] = call
            graphs_before, computed_before = len(record.graphs), len(record.computed)
            launched_before = len(launched)
            before = counters()
            start = time.perf_counter_ns()
            out = compiled(*moved)
            torch_xla.sync()
            xm.wait_device_ops()
            wall = time.perf_counter_ns() - start
            counted = delta(before, counters())
            for graph in record.graphs[graphs_before:]:
                ctx.emit(graph)
            ctx.emit(
                DynamoCallCounted(
                    call=call,
                    graphs=[g.index for g in record.graphs[graphs_before:]],
                    compiled=record.computed[computed_before:],
                    launched=launched[launched_before:],
                    counters=counted,
                    wall_ns=wall,
                )
            )
        hashes = list(launched)
    torch._dynamo.reset()
    ctx.emit(DynamoRegionsFound(regions=regions(record)))
    outputs, worst, close, first = compare(out, expected)
    ctx.emit(
        DynamoOutputsCompared(
            outputs=outputs,
            max_abs_diff=worst,
            close=close,
            values=first,
            replayed_by_hash=bool(hashes) and set(hashes) <= set(record.computed),
        )
    )
