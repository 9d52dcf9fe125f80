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

import re
import time
from typing import Any

from jaxscope.exhibit_api import InvalidSnippet, ProbeContext, blame_line, move_state, setting_line
from jaxscope.exhibit_api import torch_internals as ti

from .events import XlaCounterDelta, XlaLoopFinished, XlaStepCounted

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
    previous_hlo: list[str] = []
    shape_changed = False
    with ctx.stage("steps"):
        for step, batch in enumerate(batches):
            before = counters()
            start = time.perf_counter_ns()
            moved = pytree.tree_map(
                lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch
            )
            out = f(*moved)
            tensors = step_tensors(out, modules, optimizers)
            graph_hash = ti.graph_hash_hex(tensors)
            hlo = hlo_lines(ti.hlo_text(tensors))
            torch_xla.sync()
            xm.wait_device_ops()
            wall = time.perf_counter_ns() - start
            counted = delta(before, counters())
            new_hash = graph_hash not in hashes
            changed: list[str] = []
            if new_hash and step > 0:
                old = set(previous_hlo)
                changed = list(dict.fromkeys(x for x in hlo if x not in old))[:_CHANGED_LINES]
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
                )
            )
        values = [float(t.cpu().item()) if t is not None else float("nan") for t in losses]
    cause: str = ""
    fix = ""
    line: int | None = None
    if len(recompiling) >= 2:
        if shape_changed:
            cause = "shape"
            fix = (
                "a batch of a new shape is a new graph: pad or bucket the batches to a few "
                "fixed shapes (or drop the last, short batch: DataLoader(drop_last=True))"
            )
            line = setting_line(snippet.source, "batches") or setting_line(snippet.source, "args")
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
        )
    )
