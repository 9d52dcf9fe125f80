"""The shard_map exhibit's events: ``shard_map_body_traced`` (the per-device body, its avals
and varying axes), ``shard_map_checked`` (shard_map's checks, passed or failed) and
``shard_map_outputs_assembled`` (the per-device outputs against the reference).

It imports only pydantic and ``jaxscope.protocol`` (the core views); ``jaxscope.events`` puts
``EVENTS`` into the event union (see its docstring).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import AvalView, EventBase, JaxprView, SourceLoc, WireModel

# Which spec tree a spec or fault belongs to, and a check's outcome (also the types of
# jaxscope.internals.shard_map_checks' Fault and CheckResult, which these views are made from).
SpecsName = Literal["in_specs", "out_specs"]
CheckStatus = Literal["passed", "failed", "not_reached", "off"]


class ShardMapSpecView(WireModel):
    """One ``PartitionSpec`` of ``in_specs``/``out_specs``: its key path in that tree
    (``keystr``, ``""`` for a bare ``P``), ``str(P)`` and one text per entry (``None``, ``'x'``,
    ``('x', 'y')``). A non-``P`` leaf has ``entries == []`` and ``is_spec`` false."""

    specs: SpecsName
    path: str
    spec: str
    entries: list[str]
    is_spec: bool = True


class ShardMapFault(WireModel):
    """A spec at fault in a failed check: ``entries`` are positions inside the ``P`` (empty: the
    whole spec or tree), ``axes`` the mesh axes involved (the unknown name, the mesh axes that do
    not divide, the unmentioned axes the output varies over)."""

    specs: SpecsName
    path: str
    spec: str
    entries: list[int] = []
    axes: list[str] = []


class ShardMapCheck(WireModel):
    """One of shard_map's checks (``jax/_src/shard_map.py``, JAX's order): ``name`` (unknown_axis,
    in_arity, spec_rank, divisibility, out_arity, out_rank, replication, duplicate_axis), what it
    requires, the
    JAX helper that runs it, its status (``passed``/``failed``/``not_reached`` after an earlier
    failure/``off`` with ``check_vma=False``) and, when failed, JAX's error class and message."""

    name: str
    title: str
    source: str
    status: CheckStatus
    error_class: str | None = None
    message: str | None = None
    faults: list[ShardMapFault] = []


class ShardMapValueView(WireModel):
    """A value of the body: ``name`` (the argument's key path, ``out`` path, or jaxpr variable),
    the global shape outside shard_map and its spec (``None`` for body-internal values), the
    per-device ``aval`` inside the body and its varying manual axes (``aval.mat.varying``, mesh
    order; printed ``{V:(x,y)}``)."""

    name: str
    spec: str | None = None
    global_shape: list[int] | None = None
    aval: AvalView
    vma: list[str]


class ShardMapCollective(WireModel):
    """A body eqn that names mesh axes (psum, psum_invariant, all_gather, ppermute, ...);
    ``source_text``: the snippet's line at ``source.line``, stripped (the call the user wrote)."""

    eqn_index: int
    primitive: str
    axes: list[str]
    text: str
    source: SourceLoc | None = None
    source_text: str | None = None


class ShardMapBodyTraced(EventBase):
    """The per-device body as ``jax.shard_map`` traced it: each input's per-device aval and
    varying axes (observed with ``jax.typeof`` inside the body), each output's, every body value's
    varying axes, the collectives, and the body jaxpr (the ``jaxpr`` param of the ``shard_map``
    eqn; ``jaxpr_note`` says when it had to be traced with ``check_vma=False``)."""

    type: Literal["shard_map_body_traced"] = "shard_map_body_traced"
    inputs: list[ShardMapValueView]
    outputs: list[ShardMapValueView]
    values: list[ShardMapValueView]
    collectives: list[ShardMapCollective]
    jaxpr: JaxprView | None = None
    jaxpr_note: str | None = None


class ShardMapSite(WireModel):
    """A ``shard_map`` call found inside ``f`` (a snippet with no ``in_specs``): its user line
    (``None``: none found), the calls it sits in as JAX names them (``["jit(f)"]``) and whether
    its inputs could be evaluated (false inside a ``scan``/``while``/``cond`` body)."""

    line: int | None = None
    within: list[str] = []
    reachable: bool = True


class ShardMapFound(WireModel):
    """Real code: the snippet defines no ``in_specs``, so ``f``'s jaxpr was searched for its
    ``shard_map`` calls (``internals.shard_map_found``). ``sites`` are all of them in program
    order, ``shown`` the index of the one this run checks (the first whose inputs could be
    evaluated), whose mesh, specs and body come from its eqn's params and whose inputs are the
    arrays ``f`` passed it at ``args``."""

    sites: list[ShardMapSite]
    shown: int


class ShardMapChecked(EventBase):
    """shard_map's checks around the per-device body, each passed or failed with JAX's message,
    the specs (each entry, for highlighting the one at fault), the mesh, and the verdict: what
    ``jax.jit(jax.shard_map(f, ...))(*args)`` itself did (``ok``, or its error class and message;
    ``check``: the failed check, ``body`` for an error raised by the body itself;
    ``explanation``: plain words beside JAX's error where its message says little, e.g. a
    collective naming an axis the mesh lacks, which JAX fails as a bare AssertionError;
    ``line``: the snippet line of the specs at fault when one of shard_map's spec checks failed,
    e.g. the ``out_specs`` line for an axis the mesh lacks; ``found``: set when the call was
    found inside ``f`` rather than given by the snippet)."""

    type: Literal["shard_map_checked"] = "shard_map_checked"
    mesh_axes: list[str]
    mesh_shape: list[int]
    axis_types: list[str]
    check_vma: bool
    in_specs: str
    out_specs: str
    specs: list[ShardMapSpecView]
    arg_shapes: list[list[int]]
    checks: list[ShardMapCheck]
    ok: bool
    error_class: str | None = None
    message: str | None = None
    check: str | None = None
    explanation: str | None = None
    line: int | None = None
    found: ShardMapFound | None = None


class ShardMapShard(WireModel):
    """One device's block of an output: device, index ranges ``[start, stop)`` per dimension."""

    device: str
    index: list[list[int]]
    shape: list[int]


class ShardMapReplicaDiff(WireModel):
    """Two devices that hold the same block of an output (out_specs leaves it unsplit over a
    mesh axis: every device along it should hold the same values) but different values:
    ``device`` and ``other``, the block's index ranges ``[start, stop)`` per dimension, the
    first element of the block (row-major) past the dtype's tolerance, and both values. With
    ``check_vma=False`` JAX trusts out_specs and the global array reads the first device's."""

    device: str
    other: str
    block: list[list[int]]
    index: list[int]
    value: float
    other_value: float


class ShardMapOutput(WireModel):
    """An output of ``jax.shard_map``: global shape/dtype, its out_specs entry, every device's
    block (``addressable_shards``), a preview, and the comparison with the reference, at the
    output's dtype precision (``finite_diff.tolerance``: 1e-6 float64, 1e-4 float32, 1e-2
    narrower, scaled by ``max(1, |reference|)``). ``first_diff_index``/``first_diff_got``/
    ``first_diff_want``: the first element (row-major) past tolerance, when one is.
    ``replicas_differ``: devices that should hold the same block and do not (the first pair
    found), ``None`` when every block's copies agree."""

    path: str
    spec: str
    shape: list[int]
    dtype: str
    shards: list[ShardMapShard]
    preview: str
    reference_preview: str | None = None
    matches_reference: bool | None = None
    max_abs_diff: float | None = None
    first_diff_index: list[int] | None = None
    first_diff_got: float | None = None
    first_diff_want: float | None = None
    replicas_differ: ShardMapReplicaDiff | None = None


class ShardMapOutputsAssembled(EventBase):
    """The per-device outputs assembled into global arrays by ``jax.shard_map`` (under
    ``jax.jit``), compared with ``reference`` (the snippet's ``reference(*args)``, else ``f(*args)``
    on the global arrays when the body uses no collectives, else ``none``)."""

    type: Literal["shard_map_outputs_assembled"] = "shard_map_outputs_assembled"
    outputs: list[ShardMapOutput]
    reference: Literal["reference", "f", "none"]
    reference_note: str
    # the line of out_specs (the snippet's, or the call's in real code): where a finding about
    # the outputs is blamed
    out_specs_line: int | None = None


# This exhibit's events, in the order the union lists them (checked: every event class
# defined here must be listed, see ``jaxscope.events``).
EVENTS: tuple[type[EventBase], ...] = (
    ShardMapBodyTraced,
    ShardMapChecked,
    ShardMapOutputsAssembled,
)
