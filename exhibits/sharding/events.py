"""The sharding exhibit's events: ``sharding_placed`` (an array's mesh, spec and every device's
block), ``collectives_found`` (what the SPMD partitioner inserted) and
``sharding_error_explained`` (a sharding error read back into what went wrong).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, SourceLoc, WireModel


class ShardView(WireModel):
    """One device's block of a sharded array, read from ``jax.Array.addressable_shards``: the
    device (``str(shard.device)``) and its id, the block's index ranges per array dimension
    (``[start, stop)``, from ``shard.index``), the block's shape (``shard.data.shape``),
    ``shard.replica_id`` (0 = the first copy) and the other devices holding the same block."""

    device: str
    device_id: int = 0
    index: list[list[int]]
    shape: list[int]
    replica_id: int = 0
    replica_of: list[str] = []


class ShardingPlaced(EventBase):
    """An array of ``shape``/``dtype`` placed with a sharding (``NamedSharding(mesh, spec)``
    for ``args[0]``; the sharding ``jax.jit(f)`` gave an output): the mesh (axis names, sizes,
    types ``"Auto"``/``"Explicit"``/``"Manual"``, device ids in mesh order, row-major), the
    spec (``str(PartitionSpec)``; ``None`` for a sharding that is not a ``NamedSharding``),
    ``str(sharding)``, ``sharding.shard_shape(shape)`` and every device's block
    (``addressable_shards``, in device order). ``name``: ``"args[0]"``, ``"output"`` (a single
    output) or ``"output[i]"`` (leaf ``i`` of several). ``spec_origin`` (``args[0]`` only): where
    its spec came from, the snippet's ``spec``, ``options.spec`` (the view's form) or
    ``default`` (the snippet defines no ``spec``: ``P()``)."""

    type: Literal["sharding_placed"] = "sharding_placed"
    name: str
    mesh_axes: list[str]
    mesh_shape: list[int]
    axis_types: list[str]
    mesh_device_ids: list[int] = []
    spec: str | None
    sharding: str = ""
    shape: list[int]
    dtype: str = ""
    shard_shape: list[int] = []
    shards: list[ShardView]
    spec_origin: Literal["spec", "options.spec", "default"] | None = None


class CollectiveView(WireModel):
    """One collective instruction of the compiled per-device HLO: ``op`` (``all-reduce``,
    ``all-gather``, ``reduce-scatter``, ``collective-permute``, ``all-to-all``; an async
    ``-start`` counts as its op), the instruction name, its 0-based ``line`` in the HLO text,
    the result type, the ``replica_groups`` (or ``source_target_pairs``) text as XLA prints it,
    ``groups``: those groups expanded to device ids (``None`` when the format is not one we
    expand), and the instruction's text."""

    op: str
    name: str
    line: int
    result: str
    replica_groups: str
    groups: list[list[int]] | None = None
    text: str


class CollectivesFound(EventBase):
    """The collectives the SPMD partitioner inserted in the compiled per-device HLO
    (``jax.jit(f).lower(*args).compile().as_text()``), ``counts`` op -> number of instructions,
    and ``Compiled.input_shardings`` / ``output_shardings`` (``str`` of each leaf's sharding)."""

    type: Literal["collectives_found"] = "collectives_found"
    hlo: str
    collectives: list[CollectiveView]
    counts: dict[str, int]
    input_shardings: list[str]
    output_shardings: list[str]


class ShardingErrorExplained(EventBase):
    """A sharding error JAX raised (its class and message, unchanged) read back into what went
    wrong: ``kind`` ``indivisible`` (array ``axis`` of ``dim_size`` split ``partitions`` ways by
    the mesh axes ``mesh_axes`` of sizes ``mesh_axis_sizes``), ``duplicate_axis`` (mesh axis
    ``mesh_axes[0]`` named twice in ``spec``), ``sharding_type`` (an Explicit-mode ambiguity:
    the ``out_sharding`` fix) or ``other``. ``where``: ``"args[0]"`` (placing the input) or
    ``"f"`` (inside ``jax.jit(f)``); ``explanation``/``fix`` in plain words."""

    type: Literal["sharding_error_explained"] = "sharding_error_explained"
    error_class: str
    message: str
    kind: Literal["indivisible", "duplicate_axis", "sharding_type", "other"]
    where: str
    spec: str | None = None
    shape: list[int] = []
    axis: int | None = None
    dim_size: int | None = None
    partitions: int | None = None
    mesh_axes: list[str] = []
    mesh_axis_sizes: list[int] = []
    explanation: str
    fix: str


class AnnotationCheck(WireModel):
    """One sharding annotation inside ``f`` (``primitive`` ``sharding_constraint`` for
    ``jax.lax.with_sharding_constraint``, ``device_put`` for ``jax.device_put`` to a sharding)
    at the user's line (``source``): the requested ``spec`` (``str(PartitionSpec)``) on a value
    of ``shape``/``dtype``, and what the compiled program holds instead: ``got`` (the spec of
    ``Compiled.output_shardings`` for that value; ``replicated`` when fully replicated),
    ``kept`` whether it is equivalent to the request (``Sharding.is_equivalent_to``); ``None``
    when it could not be measured (a value later eqns read, split unevenly: XLA keeps an uneven
    split of an intermediate, padded, but a value compiled alone is a jit output, which JAX
    always holds replicated then, so that measure would say "not kept" of a kept split).
    ``where``: ``output[i]`` when the annotated value is f's flat output ``i`` (read from
    ``jax.jit(f)``'s compiled program), ``inside f`` when later eqns compute from it (then read
    from the annotation compiled alone on a value of the same type, ``jax.jit`` of the one call).
    ``reason``: why JAX could not keep it (an indivisible dimension; ``device_put`` lowering to
    nothing inside ``jit``), ``None`` when kept. ``user_jit``: the annotation runs compiled when
    the user calls ``f`` (it lies inside a ``jit``: ``f`` is decorated, or calls a jitted
    function); when not, ``f`` called eagerly places the value as asked (an eager
    ``device_put``), and only the exhibit's ``jax.jit(f)`` loses it: not a finding."""

    primitive: str
    source: SourceLoc | None = None
    spec: str
    shape: list[int]
    dtype: str
    kept: bool | None
    got: str
    where: str
    reason: str | None = None
    fix: str | None = None
    user_jit: bool = True


class ShardingAnnotationsChecked(EventBase):
    """Every sharding annotation of ``f``'s jaxpr (calls inlined), checked against the
    compiled program: empty when ``f`` has none."""

    type: Literal["sharding_annotations_checked"] = "sharding_annotations_checked"
    annotations: list[AnnotationCheck]


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    ShardingPlaced,
    CollectivesFound,
    ShardingErrorExplained,
    ShardingAnnotationsChecked,
)
