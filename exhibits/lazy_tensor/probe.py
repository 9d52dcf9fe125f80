"""The lazy_tensor exhibit's probe (PyTorch/XLA track; runs in a torch worker, design 0025).

The snippet's ``args`` are CPU tensors; the probe moves them to the XLA device and calls ``f``:
1. line by line (``sys.settrace`` on the snippet's frames, torch_xla's IR debug on so that each
   IR node names the line that made it): after each line, the pending IR of the frame's XLA
   tensors and the counters that moved (a cut runs a program);
2. plainly, as a user's script would (IR debug off): the outputs' IR text, HLO and graph hash
   before any sync, then ``torch_xla.sync()`` and the values;
3. the graph hash again on new values of the same shapes, and with ``args[0]`` one row longer.

torch and torch_xla are public API here; torch_xla's private text, HLO, hash, tensor-debug-info
and IR-debug functions (torch_xla's own way to read its pending graph) come through
:mod:`jaxscope.torch_internals`, the one module that calls ``_XLAC``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from jaxscope import torch_internals as ti
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME, ProbeContext, source_lines

from .events import (
    GraphHashCompared,
    HashTrial,
    IrNodeView,
    LazyGraphBuilt,
    LazyGraphSynced,
    LazyLineStepped,
)

# ``location=f@<snippet>:7`` in a node of the IR text (torch_xla's IR debug metadata).
_LOCATION = re.compile(r"location=[^,@]*@" + re.escape(SNIPPET_FILENAME) + r":(\d+)")


def _counter(name: str) -> int:
    import torch_xla.debug.metrics as met

    return int(met.counter_value(name) or 0)


def _samples(name: str) -> int:
    import torch_xla.debug.metrics as met

    data = met.metric_data(name)
    return int(data[0]) if data else 0


def _counts() -> tuple[int, int, int]:
    return (
        _counter("ExecuteComputation"),
        _counter("UncachedCompile"),
        _samples("TransferFromDeviceTime"),
    )


def _map_tensors(tree: Any, fn: Callable[[Any], Any]) -> Any:
    """``tree`` with ``fn`` applied to each torch tensor leaf (torch's own pytree)."""
    import torch
    from torch.utils import _pytree as pytree

    return pytree.tree_map(lambda x: fn(x) if isinstance(x, torch.Tensor) else x, tree)


def _xla_leaves(tree: Any) -> list[Any]:
    import torch
    from torch.utils import _pytree as pytree

    return [
        x
        for x in pytree.tree_leaves(tree)
        if isinstance(x, torch.Tensor) and x.device.type == "xla"
    ]


def _nodes(text: str) -> list[IrNodeView]:
    """The node lines of an IR text (between ``IR {`` and ``}``), each with the snippet line its
    ``location=`` names."""
    nodes = []
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped.startswith("%"):
            continue
        found = _LOCATION.search(stripped)
        nodes.append(IrNodeView(text=stripped, line=int(found.group(1)) if found else None))
    return nodes


def _has_ir(t: Any) -> bool:
    """Whether the XLA tensor ``t`` has an IR node yet (torch_xla's debug info: ``IR: None`` for
    a tensor that is only device data, an argument no line has used yet). Reading the IR text
    of such a tensor would make its ``device_data`` node there, in the probe's frame (it would
    name the probe as its location, for good), instead of at the user's line that first uses
    it, as in a plain script."""
    return ti.has_ir(t)


@contextmanager
def _line_steps(ctx: ProbeContext) -> Iterator[None]:
    """While active, emit a :class:`LazyLineStepped` after each line of a snippet frame."""
    import torch

    lines = source_lines(ctx.snippet.source)
    started: dict[int, tuple[int, tuple[int, int, int]]] = {}

    def finish(frame: FrameType, result: Any = None) -> None:
        line, before = started[id(frame)]
        after = _counts()
        live = [v for v in frame.f_locals.values() if isinstance(v, torch.Tensor)]
        live += _xla_leaves(result)
        tensors = [t for t in live if t.device.type == "xla" and _has_ir(t)]
        text = ti.ir_text(tensors) if tensors else ""
        nodes = _nodes(text)
        ctx.emit(
            LazyLineStepped(
                line=line,
                function=frame.f_code.co_name,
                source=lines[line - 1].strip() if 0 < line <= len(lines) else "",
                pending=nodes,
                new_nodes=sum(n.line == line for n in nodes),
                executions=after[0] - before[0],
                compiles=after[1] - before[1],
                transfers_from_device=after[2] - before[2],
            )
        )

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event in ("line", "return") and id(frame) in started:
            finish(frame, arg if event == "return" else None)
        if event == "line":
            started[id(frame)] = (frame.f_lineno, _counts())
        return local

    def outer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != SNIPPET_FILENAME or event != "call":
            return None
        return local

    previous = sys.gettrace()
    sys.settrace(outer)
    try:
        yield
    finally:
        sys.settrace(previous)


def _graph_hash(outputs: list[Any]) -> str:
    return ti.graph_hash_hex(outputs)


def _one_row_longer(t: Any) -> Any:
    """``t`` with its first row repeated at the end (a new leading size; a scalar as is)."""
    import torch

    if not isinstance(t, torch.Tensor) or t.dim() == 0:
        return t
    return torch.cat([t, t[:1]])


def _call_on_device(f: Callable[..., Any], args: Any, device: Any) -> Any:
    return f(*_map_tensors(args, lambda t: t.to(device)))


def run(ctx: ProbeContext) -> None:
    """Run ``f`` on the XLA device line by line, then plainly; emit the steps, the graph before
    and after the sync, and the hash experiments."""
    import torch_xla

    f, args = ctx.snippet.f, tuple(ctx.snippet.args)
    with ctx.stage("trace"):
        device = torch_xla.device()  # creates the PJRT client (PJRT_DEVICE, in this run)
        moved = _map_tensors(args, lambda t: t.to(device))
        torch_xla.sync()  # the arguments are device data, not pending uploads
        with ti.ir_debug(), _line_steps(ctx):
            traced = f(*moved)
        del traced, moved
        torch_xla.sync()

        # Fresh device copies: those the cuts above materialised carry IR debug locations.
        out = _call_on_device(f, args, device)
        outputs = _xla_leaves(out)
        built = LazyGraphBuilt(
            ir=ti.ir_text(outputs),
            hlo=ti.hlo_text(outputs),
            graph_hash=_graph_hash(outputs),
            outputs=[f"{tuple(t.shape)} {t.dtype}" for t in outputs],
        )
    ctx.emit(built)
    with ctx.stage("run"):
        before = (_counter("ExecuteComputation"), _counter("UncachedCompile"))
        cached = _counter("CachedCompile")
        torch_xla.sync()
        values = [str(t.cpu()) for t in outputs]
        ctx.emit(
            LazyGraphSynced(
                values=values,
                executions=_counter("ExecuteComputation") - before[0],
                compiles=_counter("UncachedCompile") - before[1],
                cached_compiles=_counter("CachedCompile") - cached,
            )
        )
    del out, outputs
    with ctx.stage("trace"):
        trials = []
        changes: list[tuple[str, Any]] = [
            ("new values, same shapes", _map_tensors(args, lambda t: t * 0.5 + 0.25)),
            ("args[0] one row longer", (_one_row_longer(args[0]), *args[1:])),
        ]
        for change, new_args in changes:
            moved_new = _map_tensors(new_args, lambda t: t.to(device))
            torch_xla.sync()
            try:
                result = f(*moved_new)
            except Exception as exc:  # a new shape f does not accept: say so, not fail the run
                trials.append(
                    HashTrial(change=f"{change} ({type(exc).__name__})", graph_hash="", same=False)
                )
                continue
            found = _graph_hash(_xla_leaves(result))
            trials.append(
                HashTrial(change=change, graph_hash=found, same=found == built.graph_hash)
            )
            del result
            torch_xla.sync()
    ctx.emit(GraphHashCompared(graph_hash=built.graph_hash, trials=trials))
