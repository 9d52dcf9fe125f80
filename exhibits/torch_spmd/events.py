"""The torch_spmd exhibit's events (PyTorch/XLA track, design 0040): a ``torch_xla`` SPMD run on
virtual CPU devices, each value read from torch_xla itself: the mesh (``xs.Mesh``), each
argument's partition spec and the tile assignment it becomes, the pending HLO's ``sharding=``
annotations, the programs the SPMD partitioner produced (XLA's dump) with their collectives,
and every device's shard of the arguments and of the outputs.

Imports only pydantic and ``jaxscope.protocol``.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, WireModel


class SpmdMeshBuilt(EventBase):
    """The SPMD client and the mesh. ``device_count`` is ``xr.global_runtime_device_count()``
    after the probe set ``CPU_NUM_DEVICES`` (the mesh's size) and called
    ``torch_xla.runtime.use_spmd()``; ``runtime_devices`` the runtime's devices (``CPU:0``...)
    and ``xla_devices`` the one virtual device tensors live on (``SPMD:0``). ``device_ids`` is
    the mesh's flat device list, ``logical_mesh`` its ``get_logical_mesh()`` flattened
    row-major (shape ``mesh_shape``); ``axis_names`` the mesh's names (the axis index as text
    where the snippet named none)."""

    type: Literal["spmd_mesh_built"] = "spmd_mesh_built"
    device_count: int
    runtime_devices: list[str]
    xla_devices: list[str]
    mesh_shape: list[int]
    axis_names: list[str]
    device_ids: list[int]
    logical_mesh: list[int]


class SpmdShardView(WireModel):
    """One device's shard of a tensor (``XLAShardedTensor.local_shards``): the runtime device,
    its ``replica_id``, the global index range ``[start, stop)`` per dimension (empty: the whole
    tensor, torch_xla's ``Ellipsis`` for a replicated one), the shard's shape without padding,
    and its values flattened row-major (empty when the shard has more than
    :data:`MAX_SHOWN_VALUES` elements)."""

    device: str
    replica_id: int
    index: list[list[int]]
    shape: list[int]
    values: list[float]


class SpmdArgSharded(EventBase):
    """``xs.mark_sharding(args[index], mesh, spec)`` on the argument moved to the device.

    ``spec`` is the snippet's partition spec as Python writes it (``('data', None)``; ``None``:
    the argument was left unannotated). ``permutation`` is the order of mesh axes
    ``_get_tile_assignment`` transposes the logical mesh by (the spec's axes, then the mesh
    axes it leaves out); ``tile_shape`` and ``tile_assignment`` (flat, row-major) the tile
    assignment that gives (``Mesh._get_op_sharding_args``), ``sharding_type`` its
    ``ShardingType`` name and ``replication_groups`` the devices holding the same tile.
    ``sharding`` is the runtime's own text, ``_get_xla_sharding_spec`` (``{devices=[2,1,4]...
    last_tile_dim_replicate}``); ``shards`` each device's shard."""

    type: Literal["spmd_arg_sharded"] = "spmd_arg_sharded"
    index: int
    shape: list[int]
    dtype: str
    spec: str
    permutation: list[int]
    tile_shape: list[int]
    tile_assignment: list[int]
    sharding_type: str
    replication_groups: list[list[int]]
    sharding: str
    shards: list[SpmdShardView]


class SpmdAnnotation(WireModel):
    """One HLO instruction carrying a ``sharding={...}`` attribute: its name (``p0.1``), its
    opcode, the attribute's value and its line (1-based) in the HLO text."""

    instruction: str
    opcode: str
    sharding: str
    line: int


class SpmdHloAnnotated(EventBase):
    """The HLO torch_xla builds for ``f``'s outputs before any sync
    (``_get_xla_tensors_hlo``): the parameters carry the arguments' shardings; the
    partitioner has not run yet (every shape is the global one)."""

    type: Literal["spmd_hlo_annotated"] = "spmd_hlo_annotated"
    hlo: str
    annotations: list[SpmdAnnotation]


class SpmdCollective(WireModel):
    """A collective in a partitioned program: its instruction name and opcode, the per-device
    result type, the device groups it runs within (``replica_groups``: empty when XLA wrote
    them in its iota form, kept in ``groups_text``), and its HLO line (1-based)."""

    instruction: str
    opcode: str
    result: str
    replica_groups: list[list[int]]
    groups_text: str
    line: int


class SpmdProgramPartitioned(EventBase):
    """One program torch_xla compiled and XLA dumped after its passes (``--xla_dump_to``,
    ``*.cpu_after_optimizations.txt``): ``module`` its name (``SyncTensorsGraph.5``: the sync
    of ``f``'s outputs; ``ReplicateShardedData.6``: ``.cpu()`` gathering a sharded output),
    ``num_partitions`` the device count the SPMD partitioner split it for, ``hlo`` the per-device
    program and ``collectives`` the communication it inserted."""

    type: Literal["spmd_program_partitioned"] = "spmd_program_partitioned"
    module: str
    cause: str
    num_partitions: int
    hlo: str
    collectives: list[SpmdCollective]


class SpmdOutputView(WireModel):
    """One output of ``f`` after ``torch_xla.sync()``: its shape and dtype, the sharding the
    partitioner gave it (``_get_xla_sharding_spec``; empty: none), each device's shard, its
    values after ``.cpu()`` (flattened, empty past :data:`MAX_SHOWN_VALUES` elements), and the
    largest difference from ``f`` run on the CPU tensors in eager torch (None: the CPU
    output has another shape), and whether they agree as ``torch.allclose(..., rtol=1e-4,
    atol=1e-4)`` says (float32 sums in another order differ in their last bits)."""

    shape: list[int]
    dtype: str
    sharding: str
    shards: list[SpmdShardView]
    values: list[float]
    max_abs_diff: float | None
    allclose: bool


class SpmdResultCompared(EventBase):
    """``f``'s outputs after the sync, against eager CPU torch. ``executions`` and ``compiles``
    are the sync's ``ExecuteReplicated`` (one per program run on all devices at once) and
    ``UncachedCompile`` counter deltas; ``gathers`` the ``ReplicateShardedData`` delta of the
    outputs' ``.cpu()`` (a sharded value gathered by a program of its own)."""

    type: Literal["spmd_result_compared"] = "spmd_result_compared"
    outputs: list[SpmdOutputView]
    executions: int
    compiles: int
    gathers: int


EVENTS = (
    SpmdMeshBuilt,
    SpmdArgSharded,
    SpmdHloAnnotated,
    SpmdProgramPartitioned,
    SpmdResultCompared,
)
