"""The xla_cache exhibit's probe (PyTorch/XLA track; runs in a torch worker, design 0037).

The snippet is a training loop's step: ``f(*batch)`` does one step (forward, backward, update)
and returns the loss; ``args`` is the first batch (CPU tensors); optional ``batches`` (a list of
batches, one per step) or ``steps`` (how many steps on ``args``; default 4). Every
``torch.nn.Module`` and module-level tensor the snippet defines is moved to the XLA device in
place (``torch.utils.swap_tensors``: an optimizer made beside them keeps its parameters), each
batch's tensors inside its step, as a loop's data loading does. After each step,
``torch_xla.sync()`` and ``xm.wait_device_ops()`` (execution is asynchronous: the counters of a
step's run would land in the next one), then the metric counters' deltas.

torch and torch_xla are public API here; torch_xla's private graph hash, HLO text and IR debug
(its own way to read its pending graph) come through :mod:`jaxscope.torch_internals`.
"""

from __future__ import annotations

import itertools
import re
import sys
import time
from types import FrameType
from typing import Any

from jaxscope.exhibit_api import InvalidSnippet, ProbeContext, blame_line, move_state, setting_line
from jaxscope.exhibit_api import torch_internals as ti

from .cuts import Cut, CutLog, counts, snippet_line, watching_cuts
from .events import XlaCounterDelta, XlaCut, XlaLoopFinished, XlaStepCounted

DEFAULT_STEPS = 4
# The counters (``counter_value``) and metrics (``metric_data``: samples, sum in ns) read.
_COUNTERS = ("UncachedCompile", "CachedCompile")
_METRICS = ("CompileTime", "ExecuteTime", "TransferToDeviceTime", "TransferFromDeviceTime")
_CHANGED_LINES = 8


def counters() -> dict[str, tuple[int, int]]:
    """Each counter as (value, 0) and each metric as (samples, sum ns), from
    ``torch_xla.debug.metrics``."""
    import torch_xla.debug.metrics as met

    found = {name: (int(met.counter_value(name) or 0), 0) for name in _COUNTERS}
    for name in _METRICS:
        data = met.metric_data(name)
        found[name] = (int(data[0]), int(data[1])) if data else (0, 0)
    return found


def delta(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> XlaCounterDelta:
    def d(name: str, i: int = 0) -> int:
        return after[name][i] - before[name][i]

    return XlaCounterDelta(
        compiles=d("CompileTime"),
        compile_ns=d("CompileTime", 1),
        uncached=d("UncachedCompile"),
        cached=d("CachedCompile"),
        executions=d("ExecuteTime"),
        execute_ns=d("ExecuteTime", 1),
        to_device=d("TransferToDeviceTime"),
        to_device_ns=d("TransferToDeviceTime", 1),
        from_device=d("TransferFromDeviceTime"),
        from_device_ns=d("TransferFromDeviceTime", 1),
    )


def _batches(ns: dict[str, Any], args: tuple[Any, ...], source: str) -> list[tuple[Any, ...]]:
    """The snippet's ``batches`` (each a tuple of ``f``'s arguments), or ``args`` ``steps``
    times."""
    if "batches" in ns:
        batches = ns["batches"]
        if not isinstance(batches, (list, tuple)) or not batches:
            raise blame_line(
                InvalidSnippet("batches must be a non-empty list of tuples of f's arguments"),
                setting_line(source, "batches"),
            )
        return [tuple(b) if isinstance(b, (list, tuple)) else (b,) for b in batches]
    steps = ns.get("steps", DEFAULT_STEPS)
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 64:
        raise blame_line(
            InvalidSnippet(f"steps must be an int from 1 to 64, not {steps!r}"),
            setting_line(source, "steps"),
        )
    return [args] * steps


def describe(value: Any) -> str:
    "``float32[8,4]`` for a tensor, ``repr`` for anything else."
    import torch

    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}[{','.join(map(str, value.shape))}]"
    return repr(value)


def _shapes(batch: tuple[Any, ...]) -> list[str]:
    import torch

    return [describe(x) for x in batch if isinstance(x, torch.Tensor)]


def step_tensors(outputs: Any, modules: list[Any], optimizers: list[Any]) -> list[Any]:
    """The XLA tensors a step leaves: ``f``'s outputs, each module's parameters, their grads
    and its buffers, each optimizer's state tensors (the graph the sync compiles)."""
    import torch
    from torch.utils import _pytree as pytree

    found = [t for t in pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]
    for m in modules:
        for p in m.parameters():
            found += [p] + ([p.grad] if p.grad is not None else [])
        found += list(m.buffers())
    for o in optimizers:
        for state in o.state.values():
            found += [t for t in pytree.tree_leaves(state) if isinstance(t, torch.Tensor)]
    unique: dict[int, Any] = {}
    for t in found:
        if t.device.type == "xla":
            unique.setdefault(id(t), t)
    return list(unique.values())


def _first_loss(outputs: Any) -> Any:
    import torch
    from torch.utils import _pytree as pytree

    leaves = [t for t in pytree.tree_leaves(outputs) if isinstance(t, torch.Tensor)]
    return leaves[0].detach() if leaves else None


# An HLO instruction's numbered names (``%constant.71``) and its metadata, which differ between
# two lowerings of the same graph.
_HLO_NUMBER = re.compile(r"(?<![\w.])(%?[A-Za-z_][\w-]*)\.\d+")
_HLO_METADATA = re.compile(r", metadata=\{.*\}")


def hlo_lines(text: str) -> list[str]:
    """The instruction lines of an HLO text with the numbers of names and the metadata
    dropped, so that two steps' lowerings compare line by line."""
    found = []
    for line in text.splitlines():
        stripped = _HLO_METADATA.sub("", _HLO_NUMBER.sub(r"\1", line.strip()))
        if stripped.startswith(("%", "ROOT ")):
            found.append(stripped)
    return found


_SOURCE_LINE = re.compile(r'source_file="<snippet>" source_line=(\d+)')


def constant_line(
    f: Any,
    batch: tuple[Any, ...],
    changed: list[str],
    device: Any,
    state: tuple[list[Any], list[Any]],
) -> int | None:
    """The snippet line that made one of ``changed`` (a step's new HLO lines): ``f`` called once
    more on ``batch`` with torch_xla's IR debug on, whose HLO metadata names each instruction's
    ``source_line`` (``state``: the modules and optimizers, as for the step's tensors). Called
    after the counted loop (IR debug changes the graph hash); the graph it leaves pending is
    never synced (nothing runs, nothing compiles)."""
    import torch
    from torch.utils import _pytree as pytree

    wanted = set(changed)
    with ti.ir_debug():
        moved = pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch)
        out = f(*moved)
        text = ti.hlo_text(step_tensors(out, *state))
    for raw in text.splitlines():
        if hlo_lines(raw) and hlo_lines(raw)[0] in wanted:
            found = _SOURCE_LINE.search(raw)
            if found:
                return int(found.group(1))
    return None


def run(ctx: ProbeContext) -> None:
    """Run the loop step by step on the XLA device; emit each step's counters and the end."""
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm
    from torch.utils import _pytree as pytree

    snippet = ctx.snippet
    f, ns = snippet.f, snippet.namespace
    batches = _batches(ns, tuple(snippet.args), snippet.source)
    with ctx.stage("client"):
        device = torch_xla.device()  # creates the PJRT client (PJRT_DEVICE, in this run)
        modules, optimizers = move_state(
            f.__globals__, [x for batch in batches for x in batch], device
        )
        torch_xla.sync()
        xm.wait_device_ops()
    losses: list[Any] = []
    hashes: list[str] = []
    recompiling: list[int] = []
    changes: dict[int, list[str]] = {}
    all_changes: dict[int, list[str]] = {}
    step_cuts: list[list[Cut]] = []
    log = CutLog()
    previous_hlo: list[str] = []
    shape_changed = False
    with ctx.stage("steps"):
        for step, batch in enumerate(batches):
            before = counters()
            start = time.perf_counter_ns()
            moved = pytree.tree_map(
                lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch
            )
            first_cut = len(log.cuts)
            with watching_cuts(log, ns):
                out = f(*moved)
            tensors = step_tensors(out, modules, optimizers)
            graph_hash = ti.graph_hash_hex(tensors)
            hlo = hlo_lines(ti.hlo_text(tensors))
            at_end = counts()
            torch_xla.sync()
            xm.wait_device_ops()
            wall = time.perf_counter_ns() - start
            ended = counts()
            cuts = log.cuts[first_cut:]
            if ended[2] > at_end[2] or ended[0] > at_end[0]:
                cuts.append(
                    Cut(
                        line=None,
                        call="step end",
                        kind="step_end",
                        compiles=ended[0] - at_end[0],
                        uncached=ended[1] - at_end[1],
                        executions=ended[2] - at_end[2],
                    )
                )
            step_cuts.append(cuts)
            counted = delta(before, counters())
            new_hash = graph_hash not in hashes
            changed: list[str] = []
            if new_hash and step > 0:
                old = set(previous_hlo)
                all_changes[step] = list(dict.fromkeys(x for x in hlo if x not in old))
                changed = all_changes[step][:_CHANGED_LINES]
                shape_changed |= _shapes(batch) != _shapes(batches[step - 1])
            if step > 0 and counted.uncached > 0:
                recompiling.append(step)
            hashes.append(graph_hash)
            changes[step] = changed
            previous_hlo = hlo
            losses.append(_first_loss(out))
            ctx.emit(
                XlaStepCounted(
                    step=step,
                    inputs=[describe(x) for x in batch],
                    graph_hash=graph_hash,
                    new_hash=new_hash,
                    changed=changed,
                    counters=counted,
                    wall_ns=wall,
                    cuts=[XlaCut(**vars(c)) for c in cuts],
                )
            )
        values = [float(t.cpu().item()) if t is not None else float("nan") for t in losses]
    cause, fix, line, detail = inside_step(step_cuts)
    if not cause and len(recompiling) >= 2:
        if shape_changed:
            cause = "shape"
            fix = (
                "a batch of a new shape is a new graph: pad or bucket the batches to a few "
                "fixed shapes (or drop the last, short batch: DataLoader(drop_last=True))"
            )
            line = setting_line(snippet.source, "batches") or setting_line(snippet.source, "args")
            padded = [x for x in all_changes.get(recompiling[-1], []) if _DEVICE_PAD.search(x)]
            if padded:
                with ctx.stage("lazy_trace"):
                    pad_line = device_pad_line(f, batches[recompiling[-1]], device)
                if pad_line is not None:
                    cause, line = "device_pad", pad_line
                    fix = (
                        "the batch is padded on the device, so the graph's input still has a "
                        "new shape every step (the pad is in the compiled graph): pad on the "
                        "host, to one fixed length, before .to(device) (in the data loader's "
                        "collate function), so every step's graph sees the same shape"
                    )
        else:
            cause = "constant"
            with ctx.stage("lazy_trace"):
                shown = [s for s in recompiling if changes[s]]
                if shown:
                    line = constant_line(
                        f, batches[shown[-1]], changes[shown[-1]], device, (modules, optimizers)
                    )
            fix = (
                "a Python number that changes every step is baked into the graph as a "
                "constant: pass it as a tensor on the device (torch.tensor(v, device=...)) or "
                "compute it on the host into one multiplier, which torch_xla uploads as data"
            )
    ctx.emit(
        XlaLoopFinished(
            losses=values,
            graph_hashes=list(dict.fromkeys(hashes)),
            recompiling_steps=recompiling,
            cause=cause,  # type: ignore[arg-type]
            fix=fix,
            line=line,
            detail=detail,
        )
    )


# An HLO pad, or a concatenate (torch.cat with zeros), in a step's new HLO lines: the new
# shape reaches a pad made on the device.
_DEVICE_PAD = re.compile(r" (pad|concatenate)\(")


# torch's C functions that pad or concatenate (F.pad calls torch._C._nn.pad).
_PAD_CALLS = frozenset({"pad", "constant_pad_nd", "cat", "concat", "concatenate"})


def device_pad_line(f: Any, batch: tuple[Any, ...], device: Any) -> int | None:
    """The first snippet line that calls one of torch's pad or concatenate functions, from one
    more call of ``f`` on ``batch`` under a profile hook (``c_call`` events: IR debug's
    metadata would name ``F.pad``'s own line in torch/nn/functional.py, the innermost Python
    frame, not the snippet's). Called after the counted loop; the graph it leaves pending is
    never synced."""
    import torch
    from torch.utils import _pytree as pytree

    found: list[int] = []

    def watch(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") in _PAD_CALLS:
            line = snippet_line(frame)
            if line is not None:
                found.append(line)

    moved = pytree.tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch)
    previous = sys.getprofile()
    sys.setprofile(watch)
    try:
        f(*moved)
    finally:
        sys.setprofile(previous)
    return found[0] if found else None


def inside_step(step_cuts: list[list[Cut]]) -> tuple[str, str, int | None, str]:
    """The finding inside a step, from its cuts: (cause, fix, line, detail), or four empty
    values. ``seed``/``repeat``: one host-read line compiled a new graph at two or more of its
    reads in one step (with one more RNG seed update each time: ``seed``); ``host_read``: a
    host read before the step's end ran a program."""
    for step, cuts in enumerate(step_cuts):
        by_line: dict[int | None, list[Cut]] = {}
        for c in cuts:
            if c.kind == "host_read" and c.uncached > 0:
                by_line.setdefault(c.line, []).append(c)
        for at, compiled in by_line.items():
            if len(compiled) < 2:
                continue
            total = sum(c.compiles for c in cuts)
            seeds = [c.seeds for c in compiled]
            grows = all(b > a for a, b in itertools.pairwise(seeds)) and seeds[0] > 0
            detail = (
                f"step {step} compiled {total} graphs; the {compiled[0].call} at line {at} "
                f"compiled a new graph at {len(compiled)} of its reads"
            )
            if grows:
                return (
                    "seed",
                    "a host read runs only the graph it needs and does not reset the RNG "
                    "seed (only a sync does): each random op after it carries the seed's "
                    "update in the graph, one more each time, so every read is a new graph. "
                    "Call torch_xla.sync() after each iteration (before the next random op), "
                    "or keep the values on the device and read them once after the step",
                    at,
                    detail + f", carrying {seeds[0]} to {seeds[-1]} RNG seed updates",
                )
            return (
                "repeat",
                "the graph this read runs is different each time (it carries what earlier "
                "iterations left pending): call torch_xla.sync() after each iteration, or "
                "read the values once after the step's sync",
                at,
                detail,
            )
    for step, cuts in enumerate(step_cuts):
        reads = [c for c in cuts if c.kind == "host_read" and c.executions > 0]
        if reads:
            first = reads[0]
            runs = sum(c.executions for c in cuts)
            return (
                "host_read",
                f"the {first.call} reads a tensor before the step's sync, so torch_xla runs "
                "the graph up to it there and waits for it, and the rest of the step is "
                "another graph (recomputing what it needs again): read the value after "
                "torch_xla.sync() (or in xm.add_step_closure), or keep it on the device",
                first.line,
                f"step {step} ran {runs} graphs: the {first.call} at line {first.line} split it",
            )
    return "", "", None, ""
