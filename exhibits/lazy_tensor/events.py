"""The lazy_tensor exhibit's events (PyTorch/XLA track, design 0025): what torch_xla's lazy
tensors did while the snippet's ``f`` ran on the XLA device, from torch_xla's own functions.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel


class IrNodeView(WireModel):
    """One line of torch_xla's IR text (``_get_xla_tensors_text`` with IR debug on, which adds
    ``location=function@<snippet>:LINE``): the text as torch_xla wrote it and the snippet line
    it names (None: the node names no snippet line)."""

    text: str
    line: int | None


class CutCall(WireModel):
    """A call at a snippet line that ran programs: ``method``, the ``torch.Tensor`` method
    called from the snippet (``item``, ``cpu``, ``tolist``, ``__bool__`` for ``bool(t)`` and
    ``if t:``, ``__repr__`` for ``print(t)``/``str(t)``, ``__format__`` for an f-string,
    ``__float__``...), seen by wrapping those methods for the line-by-line run, or ``to``
    (``.to("cpu")``, seen by a ``sys.setprofile`` hook: a wrapper's frame would become the IR
    debug location of the nodes ``.to(dtype)`` makes), and the
    counters that moved while it ran: ``executions`` (``ExecuteComputation``) and
    ``transfers_from_device`` (``TransferFromDeviceTime`` samples)."""

    method: str
    executions: int
    transfers_from_device: int


class LazyLineStepped(EventBase):
    """One snippet line of ``f`` finished (``sys.settrace``'s next line or return event).

    ``pending`` is the IR of every XLA tensor alive in that frame right after the line, one
    node per entry; ``new_nodes`` how many of them name this line; ``executions`` how many
    programs torch_xla ran during the line (``ExecuteComputation`` counter delta: a cut, the
    pending graph was compiled or fetched from the cache and executed) and ``compiles`` how
    many it compiled (``UncachedCompile`` delta); ``transfers_from_device`` the
    ``TransferFromDeviceTime`` samples added (values copied to the host). The counters are read
    after ``xm.wait_device_ops()`` (execution is asynchronous). ``cut_by`` the host-reading
    calls at this line that ran programs (the cut's kind); ``eager_mode`` whether the run was in
    torch_xla's eager mode (every op runs: executions with no call in ``cut_by``)."""

    type: Literal["lazy_line_stepped"] = "lazy_line_stepped"
    line: int
    function: str
    source: str
    pending: list[IrNodeView]
    new_nodes: int
    executions: int
    compiles: int
    transfers_from_device: int
    cut_by: list[CutCall]
    eager_mode: bool


class LazyGraphBuilt(EventBase):
    """``f``'s outputs on the XLA device right after ``f`` returned, before any sync, as
    torch_xla gives them for a plain script (IR debug off): ``ir`` is
    ``_get_xla_tensors_text(outputs)``, ``hlo`` ``_get_xla_tensors_hlo(outputs)``,
    ``graph_hash`` ``_get_graph_hash(outputs).hex()``; ``outputs`` each output's shape and
    dtype as torch prints them (``torch.Size([])``, ``torch.float32``)."""

    type: Literal["lazy_graph_built"] = "lazy_graph_built"
    ir: str
    hlo: str
    graph_hash: str
    outputs: list[str]


class LazyGraphSynced(EventBase):
    """``torch_xla.sync()`` then ``.cpu()`` of each output: the values (``str`` of the CPU
    tensor) and the counters that moved (``ExecuteComputation``, ``UncachedCompile``,
    ``CachedCompile`` deltas)."""

    type: Literal["lazy_graph_synced"] = "lazy_graph_synced"
    values: list[str]
    executions: int
    compiles: int
    cached_compiles: int


class HashTrial(WireModel):
    """One experiment on the graph hash: ``change`` what was changed in ``args``, the new
    ``graph_hash`` and whether it equals the first one (``same``)."""

    change: str
    graph_hash: str
    same: bool


class HashIngredientView(WireModel):
    """One statement of torch_xla's source that sets or merges into the graph hash (read from
    ``xla_graph_executor.cpp`` at the tag, ``hash_source.py``): the ``function`` it is in, its
    ``lines`` [first, last] (1-based), its ``text`` as written, ``key`` (the name that tells
    what it folds in) and ``meaning`` in plain words."""

    function: str
    lines: list[int]
    text: str
    key: str
    meaning: str


class HashSourceView(WireModel):
    """Where the ingredients come from: ``path`` in pytorch/xla at ``tag`` (``commit``);
    ``entry`` (``GetGraphHash``, what ``_get_graph_hash`` calls) and its ``entry_lines``, the
    ``call_line`` where it calls ``collect`` (``CollectSyncTensors``, ``collect_lines``), which
    starts the hash; ``ingredients`` in the order a call runs them."""

    path: str
    tag: str
    commit: str
    entry: str
    entry_lines: list[int]
    collect: str
    collect_lines: list[int]
    call_line: int
    ingredients: list[HashIngredientView]


class GraphHashCompared(EventBase):
    """The graph hash of ``f``'s outputs (IR debug off, before any sync) for the snippet's
    ``args`` (``graph_hash``) and for changed ones (``trials``): new values of the same shapes,
    ``args[0]`` one row longer (a new leading size), and each Python number among ``args``
    changed (``args[i] = v + 1``: a new hash where torch_xla bakes it into the graph as a
    constant, the same where it uploads it as device data); ``source`` what torch_xla folds
    into the hash, from its source."""

    type: Literal["graph_hash_compared"] = "graph_hash_compared"
    graph_hash: str
    trials: list[HashTrial]
    source: HashSourceView


class TorchaxVar(WireModel):
    """One variable of torchax's jaxpr that comes from the snippet: ``var`` its name in JAX's
    text (``b``), ``aval`` its type there (``f32[8,4]``), ``name`` what the user calls it
    (``model.0.weight``: the module's global name and torchax's name for the tensor, which is
    ``named_parameters()``'s; ``args[0]``; ``scale``, a module-level tensor; ``""`` a constant
    torchax made inside f) and ``kind``: ``parameter`` or ``buffer`` (an input, torchax's
    ``JittableModule`` split of the module's state), ``argument`` (an input), ``tensor`` (a
    module-level tensor, captured as a constant)."""

    var: str
    aval: str
    name: str
    kind: Literal["parameter", "buffer", "argument", "tensor", "constant"]


class TorchaxStaged(EventBase):
    """The same ``f`` through torchax (design 0042, the ``torchax`` option):
    ``f`` through ``torchax.interop.jax_view`` traced by ``jax.make_jaxpr`` on the module state
    (below) and the tensor ``args`` as JAX arrays (the Python numbers at ``static_args``
    static), with torch seeded 0 and torchax's environment made first (its PRNG key comes from
    torch's seed). ``jaxpr`` is JAX's text, ``stablehlo``
    ``jax.jit(...).lower(...).as_text()``, ``values`` the jitted outputs as lists;
    ``torchax_version`` and ``jax_version`` what ran. ``problem``: why there is none (torchax
    not installed, or f did what a trace cannot, e.g. ``.item()``: torchax's own error), with
    ``problem_line`` the snippet line that raised it (None: not in the snippet) and
    ``problem_source`` that line's text.

    The snippet's module-level ``nn.Module`` state is an input, as ``torchax.extract_jax`` makes
    it: the traced function is ``(states, *args)`` with ``states`` a dict, per module global,
    of its ``JittableModule`` params and buffers (the values the snippet built, before any run
    of f); the module-level tensors f reads are torchax tensors it captures, constants.
    ``inputs`` names each invar of the jaxpr in order, ``constants`` each constvar.
    ``updated``: the state f updates in place (a BatchNorm's running stats, ``count.add_(1)``),
    by the same names: the jaxpr computes the new values but they are none of its outputs
    (torchax's functional call does not hand them back), so JAX prints them as ``_``."""

    type: Literal["torchax_staged"] = "torchax_staged"
    torchax_version: str
    jax_version: str
    static_args: list[int]
    jaxpr: str
    stablehlo: str
    values: list[str]
    problem: str
    problem_line: int | None = None
    problem_source: str = ""
    inputs: list[TorchaxVar] = []
    constants: list[TorchaxVar] = []
    updated: list[str] = []


EVENTS: tuple[type[EventBase], ...] = (
    LazyLineStepped,
    LazyGraphBuilt,
    LazyGraphSynced,
    GraphHashCompared,
    TorchaxStaged,
)
