"""The xla_cache exhibit's events (PyTorch/XLA track, design 0037): a training loop run step by
step on the XLA device, with torch_xla's own metric counters (``torch_xla.debug.metrics``)
read after each step's ``torch_xla.sync()``.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel


class XlaCounterDelta(WireModel):
    """What one step added to torch_xla's metrics (after ``torch_xla.sync()`` and
    ``xm.wait_device_ops()``, minus the values before the step).

    ``compiles``/``compile_ns``: ``CompileTime`` samples and their sum (ns); ``uncached`` and
    ``cached``: the ``UncachedCompile``/``CachedCompile`` counters (a graph compiled, a graph
    found in the compile cache by its hash); ``executions``/``execute_ns``: ``ExecuteTime``;
    ``to_device``/``to_device_ns`` and ``from_device``/``from_device_ns``:
    ``TransferToDeviceTime``/``TransferFromDeviceTime`` (transfers, each a sample)."""

    compiles: int
    compile_ns: int
    uncached: int
    cached: int
    executions: int
    execute_ns: int
    to_device: int
    to_device_ns: int
    from_device: int
    from_device_ns: int


class XlaCut(WireModel):
    """One graph cut inside a step that ran a program (issue 33, design 0063): a host read of
    a pending tensor (``item``, ``float()``, ``print/repr``, ``cpu``, ...), a
    ``torch_xla.sync``/``xm.mark_step`` the snippet calls, or the step's end (the exhibit's own
    ``torch_xla.sync()``, ``line`` None). ``line``: the innermost snippet line that made it;
    ``compiles``: ``CompileTime`` samples, ``uncached``: ``UncachedCompile``, ``executions``:
    ``ExecuteTime`` samples during the call; for a host read, ``graph_hash`` (hex) of the
    graph it ran (``_get_graph_hash([t])``) and ``seeds``, the RNG seed updates that graph's
    HLO carries (one ``s64[] constant(214013)``, GetRngSeed's multiplier, each)."""

    line: int | None
    call: str
    kind: Literal["host_read", "sync", "step_end"]
    compiles: int
    uncached: int
    executions: int
    graph_hash: str
    seeds: int


class XlaStepCounted(EventBase):
    """One step of the loop: ``f(*batch)`` on the XLA device, then ``torch_xla.sync()``.

    ``step``: 0-based; ``inputs``: the batch's tensors as ``float32[8,4]``, Python values as
    ``repr``; ``graph_hash``: ``_get_graph_hash`` (hex) of the step's tensors (``f``'s outputs,
    then each module's parameters, their grads and buffers, then each optimizer's state
    tensors, in the snippet's order) before the sync: torch_xla's compile cache key;
    ``new_hash``: no earlier step had it; ``changed``: for a new hash after the first step, the
    HLO instructions (``_get_xla_tensors_hlo``, names' numbers and metadata dropped) of this
    step's graph that the previous step's graph does not have (the new shape or constant; at
    most 8, each once), empty when only the graph's structure differs; ``counters``: the step's
    metric deltas; ``wall_ns``: the step's wall time (batch upload, the call, the hash, the HLO
    text and the sync); ``cuts``: each cut of the step that ran a program, in order, the
    step's end last."""

    type: Literal["xla_step_counted"] = "xla_step_counted"
    step: int
    inputs: list[str]
    graph_hash: str
    new_hash: bool
    changed: list[str]
    counters: XlaCounterDelta
    wall_ns: int
    cuts: list[XlaCut] = []


class XlaLoopFinished(EventBase):
    """The loop's end: ``losses`` (the first tensor ``f`` returned each step, ``.item()`` after
    the loop), the distinct graph hashes, and ``recompiling_steps``: the steps after the first
    whose ``UncachedCompile`` grew. ``cause`` (``shape``, ``constant``) and ``fix`` say, for a
    loop that compiles on two or more steps after the first, what changed and what to do;
    ``line`` the snippet line to change: the ``batches``/``args`` line for a shape; for a
    constant, the line torch_xla's IR debug metadata (``source_line`` in the HLO) names for one
    of the last recompiling step's new HLO lines, from one more call of ``f`` after the loop;
    None when none is found.

    Inside a step (issue 33): ``seed`` when one host-read line compiled a new graph at each of
    its reads within a step and each carried one more RNG seed update (a random op after a
    host read, no sync between: the seed's update stays in the graph); ``repeat`` the same
    without seed updates; ``host_read`` when a host read before the step's end ran a graph (the
    step is split in two); ``device_pad`` a ``shape`` whose new shapes reach a pad (or
    concatenate) on the device, ``line`` that op's line. ``detail`` says what was counted."""

    type: Literal["xla_loop_finished"] = "xla_loop_finished"
    losses: list[float]
    graph_hashes: list[str]
    recompiling_steps: list[int]
    cause: Literal["shape", "constant", "device_pad", "seed", "repeat", "host_read", ""]
    fix: str
    line: int | None
    detail: str = ""


EVENTS: tuple[type[EventBase], ...] = (XlaStepCounted, XlaLoopFinished)
