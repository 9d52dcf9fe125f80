"""The pmap exhibit's events: ``pmap_traced`` (the jit and the shard_map that
``jax.make_jaxpr(jax.pmap(f))`` holds), ``pmap_devices_run`` (what each device received and
returned), ``pmap_collectives_moved`` (each collective's values on every device, before and
after) and ``pmap_equivalents_compared`` (the same computation written with ``jax.jit`` +
``NamedSharding`` and with ``jax.shard_map``, beside pmap's). The arrays pmap placed are the
sharding exhibit's ``sharding_placed``.

It imports only pydantic and ``jaxscope.exhibit_api`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union.
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import EventBase, JaxprView, NestedNumbers, SourceLoc, WireModel


class PmapCollectiveEqn(WireModel):
    """An eqn of the per-device body that names the pmap axis (``psum``, ``all_gather``,
    ``ppermute``, ...): its index in the body, primitive, the axes it names, its text, and the
    user's line (``source``) with the line's code (``source_text``)."""

    eqn_index: int
    primitive: str
    axes: list[str]
    text: str
    source: SourceLoc | None = None
    source_text: str | None = None


class PmapTraced(EventBase):
    """What ``jax.make_jaxpr(jax.pmap(f, axis_name=..., in_axes=...))(*args)`` holds: one ``jit``
    eqn (``jit_name``, its ``name`` param) whose jaxpr is one ``shard_map`` eqn over a one-axis
    mesh named ``axis_name`` (``_internal_pmap_axis_name`` when ``f`` gave none:
    ``axis_name_given`` false) of ``mesh_size`` devices (``device_ids``, mesh order), with the
    eqn's ``in_specs``/``out_specs`` (``str`` of each), ``check_vma`` and the per-device body
    (``body``), which squeezes the mapped axis off each input (``squeezes``) and puts it back on
    each output (``expands``). ``in_axes``: pmap's ``in_axes`` per flat argument (``None``:
    broadcast). ``collectives``: the body's eqns that name the axis."""

    type: Literal["pmap_traced"] = "pmap_traced"
    jit_name: str
    axis_name: str
    axis_name_given: bool
    mesh_size: int
    device_ids: list[int]
    device_count: int
    in_specs: list[str]
    out_specs: list[str]
    check_vma: bool
    in_axes: list[int | None]
    squeezes: int
    expands: int
    body: JaxprView
    collectives: list[PmapCollectiveEqn]


class PmapLeafShape(WireModel):
    """One argument or output leaf as one device sees it: key path (``args[1][0]``, ``out['w']``),
    the global shape pmap was called with (or returned) and the device's shape (the mapped axis
    squeezed off; the whole shape for a broadcast argument, ``mapped`` false)."""

    path: str
    global_shape: list[int]
    shape: list[int]
    dtype: str
    mapped: bool = True


class PmapDeviceValues(WireModel):
    """One device of the mesh: its id and name, its position along the axis (``index``: the row
    of each mapped argument it received, from ``addressable_shards``), its inputs' shapes, and its
    outputs: each output leaf's block on this device with the mapped axis squeezed off
    (``values``, nested lists; ``None`` past the size limit) and a preview."""

    device_id: int
    device: str
    index: int
    inputs: list[PmapLeafShape]
    outputs: list[PmapLeafShape]
    values: list[NestedNumbers | None]
    previews: list[str]


class PmapDevicesRun(EventBase):
    """``jax.pmap(f)(*args)`` run: every device of its mesh with what it received and returned
    (read from the output arrays' ``addressable_shards``), and each output's global shape."""

    type: Literal["pmap_devices_run"] = "pmap_devices_run"
    devices: list[PmapDeviceValues]
    outputs: list[PmapLeafShape]


class PmapCollectiveMoved(WireModel):
    """One collective of the body run on the devices: the body evaluated up to and including
    the eqn, under the same ``jax.jit(jax.shard_map(...))`` pmap built, returning the eqn's
    operand and result on every device (``before``/``after``, one entry per device in mesh
    order; ``None`` past the size limit). ``operand``: which operand of the eqn (a ``psum`` of
    several values is one eqn of several operands, each moved alike)."""

    eqn: PmapCollectiveEqn
    operand: int = 0
    operand_shape: list[int]
    result_shape: list[int]
    before: list[NestedNumbers | None]
    after: list[NestedNumbers | None]


class PmapCollectivesMoved(EventBase):
    """Every collective of the body that moves data, each with its values per device."""

    type: Literal["pmap_collectives_moved"] = "pmap_collectives_moved"
    device_ids: list[int]
    moved: list[PmapCollectiveMoved]


class PmapEquivalent(WireModel):
    """One way of writing the computation: ``name`` (``pmap(f)``, ``jit_version``,
    ``shard_map_version``), how it was called (``call``), the jaxpr of that call, each output
    leaf's preview, and the comparison with pmap's outputs: ``compared`` ``whole`` (the same
    shape as pmap's output) or ``per_device`` (pmap's output minus its leading axis: every
    device's row against it), ``max_abs_diff`` and ``equal`` (at the dtype's tolerance)."""

    name: str
    call: str
    jaxpr: JaxprView
    previews: list[str]
    compared: Literal["self", "whole", "per_device"]
    max_abs_diff: float | None = None
    equal: bool | None = None
    note: str | None = None


class PmapEquivalentsCompared(EventBase):
    """pmap's computation and the snippet's ``jit_version`` / ``shard_map_version`` (those it
    defines), each run with ``jax.jit`` on ``args`` placed with ``NamedSharding(mesh, P(axis))``
    (``P()`` for a broadcast argument) on ``mesh`` (``mesh_text``: the snippet's ``mesh``, else
    pmap's)."""

    type: Literal["pmap_equivalents_compared"] = "pmap_equivalents_compared"
    mesh_text: str
    placements: list[str]
    versions: list[PmapEquivalent]


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    PmapTraced,
    PmapDevicesRun,
    PmapCollectivesMoved,
    PmapEquivalentsCompared,
)
