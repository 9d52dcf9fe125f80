"""The graph cuts inside one step of the xla_cache exhibit's loop (issue 33, design 0063).

torch_xla runs (and, for a graph it has not seen, compiles) its pending graph at each cut: each
``torch_xla.sync()``/``xm.mark_step()`` (and ``xm.optimizer_step``, which calls it) and each
early host read of a pending tensor (``.item()``, ``float()``, ``print``, ``.cpu()``, ...). While
:func:`watching_cuts` is active, each outermost such call that ran a program is recorded with
the innermost snippet line that made it, the call's name, the compiles
(``CompileTime`` samples), ``UncachedCompile`` and executions (``ExecuteTime`` samples) it
caused, and for a host read the graph hash of the tensor read (``_get_graph_hash([t])``, the
graph torch_xla runs for it) and, the first time that hash is seen, how many RNG seed updates
its HLO carries (see :func:`seed_updates`).

A host read runs only the graph its value needs and leaves the rest pending; it does not reset
the device's RNG seed, which only a sync does. So a random op after a host read and before the
next sync draws its seed from the previous seed's IR, and each read's graph carries one more
seed update (``xla_graph_executor.cpp`` v2.9.0 :150-178, ``GetRngSeed``: ``seed_ir_value = b +
k * seed_ir_value`` with k = 214013, b = 2531011): a new graph, a new compile, at every read.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from jaxscope.exhibit_api import SNIPPET_FILENAME
from jaxscope.exhibit_api import torch_internals as ti

# torch.Tensor's methods that read a value on the host (a cut when the tensor is pending).
HOST_READS = (
    "item",
    "cpu",
    "tolist",
    "numpy",
    "__bool__",
    "__float__",
    "__int__",
    "__index__",
    "__repr__",
    "__format__",
)
# The names the page shows for a host read (``float(t)`` calls ``t.__float__``).
CALL_NAMES = {
    "item": ".item()",
    "cpu": ".cpu()",
    "tolist": ".tolist()",
    "numpy": ".numpy()",
    "__bool__": "bool()",
    "__float__": "float()",
    "__int__": "int()",
    "__index__": "index",
    "__repr__": "print/repr",
    "__format__": "format",
}
# GetRngSeed's multiplier (xla_graph_executor.cpp v2.9.0 :150): one s64 constant of it in the
# HLO per seed update the graph carries.
SEED_MULTIPLIER = "s64[] constant(214013)"


def seed_updates(hlo: str) -> int:
    """How many RNG seed updates (``b + k * seed``) an HLO text carries."""
    return hlo.count(SEED_MULTIPLIER)


@dataclass
class Cut:
    """One cut that ran a program: ``line`` (innermost snippet line; None outside ``f``),
    ``call`` (``item``, ``float()``, ``torch_xla.sync``, ...), ``kind`` (``host_read`` or
    ``sync``), counter deltas, and for a host read the hash and seed updates of its graph."""

    line: int | None
    call: str
    kind: str
    compiles: int
    uncached: int
    executions: int
    graph_hash: str = ""
    seeds: int = 0


@dataclass
class CutLog:
    """The cuts recorded so far, and each host-read graph's seed updates by hash."""

    cuts: list[Cut] = field(default_factory=list)
    seeds: dict[str, int] = field(default_factory=dict)


def counts() -> tuple[int, int, int]:
    """(``CompileTime`` samples, ``UncachedCompile``, ``ExecuteTime`` samples)."""
    import torch_xla.debug.metrics as met

    compile_time = met.metric_data("CompileTime")
    execute_time = met.metric_data("ExecuteTime")
    return (
        int(compile_time[0]) if compile_time else 0,
        int(met.counter_value("UncachedCompile") or 0),
        int(execute_time[0]) if execute_time else 0,
    )


def snippet_line(frame: FrameType | None) -> int | None:
    "The line of the innermost snippet frame at or above ``frame`` (None: none)."
    while frame is not None and frame.f_code.co_filename != SNIPPET_FILENAME:
        frame = frame.f_back
    return frame.f_lineno if frame is not None else None


@contextmanager
def watching_cuts(log: CutLog, namespace: dict[str, Any]) -> Iterator[None]:
    """While active, record each outermost host read (:data:`HOST_READS`) and each
    ``torch_xla.sync``/``xm.mark_step`` call that ran a program in ``log``. The sync functions
    are replaced in their modules and under any name ``namespace`` (the snippet's globals)
    binds them to; everything is put back after, even when ``f`` raises."""
    import torch
    import torch_xla
    import torch_xla.core.xla_model as xm

    depth = [0]

    def record(name: str, kind: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def cut(*args: Any, **kwargs: Any) -> Any:
            if kind == "host_read" and not (
                args and isinstance(args[0], torch.Tensor) and args[0].device.type == "xla"
            ):
                return method(*args, **kwargs)  # a CPU tensor's read runs no program
            depth[0] += 1
            outermost = depth[0] == 1
            graph_hash = ""
            if outermost and kind == "host_read":
                t = args[0]
                if ti.has_ir(t):
                    graph_hash = ti.graph_hash_hex([t])
                    if graph_hash not in log.seeds:
                        log.seeds[graph_hash] = seed_updates(ti.hlo_text([t]))
            before = counts() if outermost else (0, 0, 0)
            try:
                return method(*args, **kwargs)
            finally:
                depth[0] -= 1
                if outermost:
                    # Execution is asynchronous, and its ExecuteTime sample can land after a
                    # host read's value is back: wait, so that the cut's counts are its own.
                    xm.wait_device_ops()
                    after = counts()
                    if after[2] > before[2] or after[0] > before[0]:
                        log.cuts.append(
                            Cut(
                                line=snippet_line(sys._getframe(1)),
                                call=CALL_NAMES.get(name, name),
                                kind=kind,
                                compiles=after[0] - before[0],
                                uncached=after[1] - before[1],
                                executions=after[2] - before[2],
                                graph_hash=graph_hash,
                                seeds=log.seeds.get(graph_hash, 0),
                            )
                        )

        return cut

    saved: list[tuple[Any, str, Any, bool]] = []

    def replace(owner: Any, attr: str, new: Any) -> None:
        own = attr in vars(owner) if isinstance(owner, type) else True
        saved.append((owner, attr, getattr(owner, attr), own))
        setattr(owner, attr, new)

    sync, mark_step = torch_xla.sync, xm.mark_step
    new_sync = record("torch_xla.sync", "sync", sync)
    new_mark_step = record("xm.mark_step", "sync", mark_step)
    try:
        for name in HOST_READS:
            replace(torch.Tensor, name, record(name, "host_read", getattr(torch.Tensor, name)))
        replace(torch_xla, "sync", new_sync)
        replace(xm, "mark_step", new_mark_step)
        for key, value in list(namespace.items()):
            if value is sync:
                namespace[key] = new_sync
                saved.append((namespace, key, sync, True))
            elif value is mark_step:
                namespace[key] = new_mark_step
                saved.append((namespace, key, mark_step, True))
        yield
    finally:
        for owner, attr, old, own in reversed(saved):
            if isinstance(owner, dict):
                owner[attr] = old
            elif own:
                setattr(owner, attr, old)
            else:
                delattr(owner, attr)
