"""Reading what JAX and XLA report about a sharded computation (public API only).

* :func:`placed` — a :class:`ShardingPlaced` from a ``jax.Array``'s ``sharding`` and
  ``addressable_shards``;
* :func:`collectives_in` — the collective instructions of a compiled per-device HLO text
  (``Compiled.as_text()``), with their replica groups as XLA prints them and, where the format is
  one of XLA's plain ones, expanded to device ids;
* :func:`explain_error` — a :class:`ShardingErrorExplained` read from the class and message of
  JAX's own sharding errors (``IndivisibleError``, ``DuplicateSpecError``,
  ``ShardingTypeError``); the message formats are pinned by
  ``backend/tests/test_internals_contract_sharding.py``.
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any, Literal

import jax
import numpy as np
from jax.sharding import NamedSharding

from exhibits.sharding.events import (
    CollectiveView,
    ShardingErrorExplained,
    ShardingPlaced,
    ShardView,
)

COLLECTIVE_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")

# `  ROOT %all-reduce.1 = f32[4]{0} all-reduce(%x), channel_id=1, replica_groups=...`
_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<result>.+?)\s+"
    r"(?P<op>" + "|".join(COLLECTIVE_OPS) + r")(?:-start)?\("
)


# --------------------------------------------------------------------------------------------
# Arrays and their shards
# --------------------------------------------------------------------------------------------


def index_ranges(index: tuple[Any, ...], shape: tuple[int, ...]) -> list[list[int]]:
    """``[start, stop)`` per dimension of a shard's ``index`` (a tuple of slices)."""
    out: list[list[int]] = []
    for sl, dim in zip(index, shape, strict=True):
        start, stop, _ = sl.indices(dim)
        out.append([start, stop])
    return out


def placed(
    name: str,
    array: jax.Array,
    spec_origin: Literal["spec", "options.spec", "default"] | None = None,
) -> ShardingPlaced:
    """The :class:`ShardingPlaced` of ``array``: its sharding's mesh and spec (when it is a
    ``NamedSharding``) and every addressable shard, in device-id order; ``spec_origin``: where
    the spec of ``args[0]`` came from."""
    sharding = array.sharding
    shape = tuple(int(d) for d in array.shape)
    shards = sorted(array.addressable_shards, key=lambda s: s.device.id)
    ranges = [index_ranges(tuple(s.index), shape) for s in shards]
    views: list[ShardView] = []
    for s, rng in zip(shards, ranges, strict=True):
        others = [
            str(t.device) for t, r in zip(shards, ranges, strict=True) if r == rng and t is not s
        ]
        views.append(
            ShardView(
                device=str(s.device),
                device_id=int(s.device.id),
                index=rng,
                shape=[int(d) for d in s.data.shape],
                replica_id=int(s.replica_id),
                replica_of=others,
            )
        )
    if isinstance(sharding, NamedSharding):
        mesh = sharding.mesh
        axes = [str(a) for a in mesh.axis_names]
        mesh_shape = [int(mesh.shape[a]) for a in mesh.axis_names]
        types = [t.name for t in mesh.axis_types]
        ids = [int(d.id) for d in np.asarray(mesh.devices).flat]
        spec: str | None = str(sharding.spec)
    else:
        ids = sorted(int(getattr(d, "id", 0)) for d in sharding.device_set)
        axes, mesh_shape, types, spec = [], [len(ids)], [], None
    return ShardingPlaced(
        name=name,
        mesh_axes=axes,
        mesh_shape=mesh_shape,
        axis_types=types,
        mesh_device_ids=ids,
        spec=spec,
        sharding=str(sharding),
        shape=list(shape),
        dtype=str(array.dtype),
        shard_shape=[int(d) for d in sharding.shard_shape(shape)],
        shards=views,
        spec_origin=spec_origin,
    )


# --------------------------------------------------------------------------------------------
# Collectives in compiled HLO
# --------------------------------------------------------------------------------------------


def _attribute(text: str, key: str) -> str | None:
    """The value of ``key=`` in an HLO instruction: up to the next top-level ``, name=``
    (``device_ids=`` belongs to the mesh form of ``replica_groups``)."""
    at = text.find(key + "=")
    if at < 0:
        return None
    i = at + len(key) + 1
    depth = 0
    start = i
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(", ", i):
            follows = re.match(r", ([a-z_]+)=", text[i:])
            if follows and follows.group(1) != "device_ids":
                break
        i += 1
    return text[start:i].strip()


def _iota(dims: list[int], perm: list[int] | None) -> np.ndarray[Any, Any]:
    ids = np.arange(math.prod(dims)).reshape(dims)
    return ids.transpose(perm) if perm else ids


def _ints(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"\d+", text)]


def expand_groups(text: str) -> list[list[int]] | None:
    """Device-id groups of a ``replica_groups``/``source_target_pairs`` text, in XLA's forms:
    explicit (``{{0,1},{2,3}}``), iota (``[4,2]<=[8]``, ``[2,4]<=[4,2]T(1,0)``) and mesh
    (``mesh['axis_0'=2,'axis_1'=4] {'axis_0'}``, optionally ``device_ids=([..]T(..))``, with
    sub-axes ``{'axis_0':(2)2}``: size 2 of axis_0 after a pre-size of 2); ``None`` for a form
    not recognised. Mesh groups follow XLA's ``MeshAxesReplicaGroupList::
    flattened_replica_groups`` (xla/hlo/ir/replica_group.cc): each grouped mesh axis is reshaped
    into [pre-size, size, rest] pieces, the pieces grouped over are moved last (mesh-axis order),
    and the device array is cut into groups of their product."""
    text = text.strip()
    if text.startswith("{"):
        return [_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1])]
    iota = re.fullmatch(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if iota:
        out_dims = _ints(iota.group(1))
        ids = _iota(_ints(iota.group(2)), _ints(iota.group(3)) if iota.group(3) else None)
        return [[int(v) for v in row] for row in ids.reshape(out_dims[0], -1)]
    mesh = re.fullmatch(
        r"mesh\[(?P<axes>[^\]]*)\]"
        r"(?:, device_ids=\(\[(?P<dims>[\d,]+)\](?:T\((?P<perm>[\d,]+)\))?\))?"
        r"\s*\{(?P<group>[^}]*)\}",
        text,
    )
    if mesh is None:
        return None
    names = re.findall(r"'([^']+)'=(\d+)", mesh.group("axes"))
    order = [n for n, _ in names]
    sizes = [int(n) for _, n in names]
    if mesh.group("dims"):
        perm = _ints(mesh.group("perm")) if mesh.group("perm") else None
        ids = _iota(_ints(mesh.group("dims")), perm).reshape(sizes)
    else:
        ids = np.arange(math.prod(sizes)).reshape(sizes)
    refs: dict[int, list[tuple[int, int] | None]] = {}  # mesh axis -> its (pre, size) pieces
    for m in re.finditer(r"'([^']+)'(?::\((\d+)\)(\d+))?", mesh.group("group")):
        if m.group(1) not in order:
            return None
        piece = (int(m.group(2)), int(m.group(3))) if m.group(2) else None
        refs.setdefault(order.index(m.group(1)), []).append(piece)
    dims: list[int] = []
    grouped: list[int] = []
    for axis, full in enumerate(sizes):
        pieces = refs.get(axis)
        if pieces is None:
            dims.append(full)
            continue
        if pieces == [None]:
            grouped.append(len(dims))
            dims.append(full)
            continue
        if None in pieces:  # the whole axis and a sub-axis of it: not a form XLA prints
            return None
        # Sub-axes sorted by pre-size, gaps between them kept as their own dims (XLA's
        # HandleMultiAxisRefPerDimension); grouped in the order they are listed.
        listed = [p for p in pieces if p is not None]
        where: dict[tuple[int, int], int] = {}
        done = 1
        for pre, size in sorted(listed):
            if pre % done or full % (pre * size):
                return None
            if pre > done:
                dims.append(pre // done)
            where[(pre, size)] = len(dims)
            dims.append(size)
            done = pre * size
        if done != full:
            dims.append(full // done)
        grouped += [where[p] for p in listed]
    rest = [i for i in range(len(dims)) if i not in grouped]
    size = math.prod(dims[i] for i in grouped)
    moved = ids.reshape(dims).transpose(rest + grouped)
    return [[int(v) for v in row] for row in moved.reshape(-1, size)]


def collectives_in(hlo: str) -> list[CollectiveView]:
    """Every collective instruction of a compiled HLO text, in text order."""
    found: list[CollectiveView] = []
    for n, line in enumerate(hlo.split("\n")):
        m = _INSTRUCTION.match(line)
        if m is None:
            continue
        op = m.group("op")
        key = "source_target_pairs" if op == "collective-permute" else "replica_groups"
        groups_text = _attribute(line, key) or ""
        found.append(
            CollectiveView(
                op=op,
                name=m.group("name"),
                line=n,
                result=m.group("result").strip(),
                replica_groups=(key + "=" + groups_text) if groups_text else "",
                groups=expand_groups(groups_text) if groups_text else None,
                text=line.strip(),
            )
        )
    return found


def counts_of(collectives: list[CollectiveView]) -> dict[str, int]:
    """op -> number of instructions."""
    counts: dict[str, int] = {}
    for c in collectives:
        counts[c.op] = counts.get(c.op, 0) + 1
    return counts


# --------------------------------------------------------------------------------------------
# Sharding errors
# --------------------------------------------------------------------------------------------

# A printed PartitionSpec: entries are names, None or tuples of names (one level of parens), so
# a match cannot run on past its own closing paren into the rest of JAX's message.
_SPEC = r"P\((?:[^()]|\([^()]*\))*\)"
_INDIVISIBLE = re.compile(
    r"spec=(?P<spec>" + _SPEC + r"), memory_kind.*?implies that array axis (?P<axis>\d+) is "
    r"partitioned (?P<parts>\d+) times, but the dimension size is (?P<dim>\d+) "
    r"\(full shape: \((?P<shape>[\d, ]*)\)",
    re.S,
)
_MESH_SIZES = re.compile(r"Mesh\((?P<axes>(?:'[^']+': \d+(?:, )?)+)")
_DUPLICATE = re.compile(r"but (?P<spec>P\(.*\)) has duplicate entries for `(?P<axis>[^`]+)`")


def spec_entries(spec_text: str) -> tuple[Any, ...] | None:
    """The entries of a printed ``PartitionSpec`` (``P('x', None)``, ``P(('x', 'y'),)``)."""
    if not (spec_text.startswith("P(") and spec_text.endswith(")")):
        return None
    inner = spec_text[2:-1].strip()
    if inner and not inner.endswith(","):
        inner += ","
    try:
        value = ast.literal_eval("(" + inner + ")")
    except (ValueError, SyntaxError):
        return None
    return tuple(value)


def _names(entry: Any) -> list[str]:
    if entry is None:
        return []
    if isinstance(entry, tuple | list):
        return [str(e) for e in entry]
    return [str(entry)]


def _indivisible(error: BaseException, where: str) -> ShardingErrorExplained | None:
    message = str(error)
    m = _INDIVISIBLE.search(message)
    if m is None:
        return None
    axis, parts, dim = int(m.group("axis")), int(m.group("parts")), int(m.group("dim"))
    shape = _ints(m.group("shape"))
    entries = spec_entries(m.group("spec")) or ()
    names = _names(entries[axis]) if axis < len(entries) else []
    sizes_found = _MESH_SIZES.search(message)
    mesh_sizes = (
        dict(re.findall(r"'([^']+)': (\d+)", sizes_found.group("axes"))) if sizes_found else {}
    )
    sizes = [int(mesh_sizes[n]) for n in names if n in mesh_sizes]
    padded = -(-dim // parts) * parts
    along = "those axes" if len(names) > 1 else "that axis"
    named = (
        " × ".join(f"'{n}' ({s})" for n, s in zip(names, sizes, strict=False)) or "its mesh axes"
    )
    return ShardingErrorExplained(
        error_class=type(error).__name__,
        message=message,
        kind="indivisible",
        where=where,
        spec=m.group("spec"),
        shape=shape,
        axis=axis,
        dim_size=dim,
        partitions=parts,
        mesh_axes=names,
        mesh_axis_sizes=sizes,
        explanation=(
            f"The spec puts mesh axis {named} on array axis {axis}, so that axis is cut into "
            f"{parts} equal blocks, one per position along {along}. "
            f"Array axis {axis} has size {dim}, and {dim} is not a multiple of {parts} "
            f"({dim} = {dim // parts} × {parts} + {dim % parts}): NamedSharding only makes "
            "equal blocks."
        ),
        fix=(
            f"Pad axis {axis} to {padded} (a multiple of {parts}) and mask the padded rows, "
            f"or leave axis {axis} unsharded (None at position {axis} of the spec), or put a "
            f"mesh axis whose size divides {dim} there."
        ),
    )


def _duplicate(error: BaseException, where: str) -> ShardingErrorExplained | None:
    message = str(error)
    m = _DUPLICATE.search(message)
    if m is None:
        return None
    axis = m.group("axis")
    return ShardingErrorExplained(
        error_class=type(error).__name__,
        message=message,
        kind="duplicate_axis",
        where=where,
        spec=m.group("spec"),
        mesh_axes=[axis],
        explanation=(
            f"Mesh axis '{axis}' appears at two positions of {m.group('spec')}. A mesh axis is "
            "one way of cutting the devices into groups: it can split one array dimension, "
            "not two (each device would need two different blocks at once)."
        ),
        fix=(
            f"Name '{axis}' at one position only, e.g. P('{axis}', None); to split one array "
            f"axis over two mesh axes, group them: P(('{axis}', 'other'),)."
        ),
    )


def _sharding_type(error: BaseException, where: str) -> ShardingErrorExplained:
    message = str(error)
    contracting = "Contracting dimensions are sharded" in message
    if contracting:
        explanation = (
            "The mesh is Explicit: every value's type carries its sharding, and each op must "
            "say what its output's sharding is. Both operands are sharded along the "
            "contracting dimension, so each device holds only partial sums: the result could "
            "be all-reduced and replicated, or reduce-scattered along either output "
            "dimension. JAX refuses to guess."
        )
        fix = (
            "Say which you want with out_sharding: jnp.matmul(a, w, out_sharding=P('x', None)) "
            "(a PartitionSpec needs `with jax.set_mesh(mesh):`, or pass "
            "NamedSharding(mesh, P(...))); "
            "or jax.reshard an operand first; or use an Auto mesh "
            "(axis_types=(AxisType.Auto,) * n) and let the partitioner choose (it inserts an "
            "all-reduce)."
        )
    else:
        explanation = (
            "The mesh is Explicit: shardings are part of the types, and this op's output "
            "sharding cannot be inferred from its inputs' shardings."
        )
        fix = (
            "Give the output sharding: ops that take out_sharding= (jnp.matmul, jnp.einsum, "
            "jnp.reshape, lax.dot_general, ...) accept P(...) under jax.set_mesh(mesh), or "
            "jax.reshard(x, P(...)) the operand to an unambiguous sharding first."
        )
    return ShardingErrorExplained(
        error_class=type(error).__name__,
        message=message,
        kind="sharding_type",
        where=where,
        explanation=explanation,
        fix=fix,
    )


_UNKNOWN_AXIS = re.compile(
    r"Resource axis: (?P<axis>\S+) of (?P<spec>P\(.*?\)) is not found in mesh: (?P<mesh>\(.*?\))"
)
_RANK = re.compile(
    r"spec=(?P<spec>" + _SPEC + r"), memory_kind=\w+\) is only valid for values of rank at least "
    r"(?P<need>\d+), but was applied to a value of rank (?P<rank>\d+)"
)

# On a mesh with Explicit axes (``jax.make_mesh``'s default) JAX only asserts: ``(0, P('x',))``
# (the array's rank, the spec).
_RANK_ASSERTED = re.compile(r"\((?P<rank>\d+), (?P<spec>P\(.*\))\)")


def _spec_entries(spec: str) -> int | None:
    """How many entries ``P(...)``'s printout lists (``None`` if not a plain literal)."""
    try:
        entries = ast.literal_eval(spec[1:] if spec != "P()" else "()")
    except (ValueError, SyntaxError):
        return None
    return len(entries) if isinstance(entries, tuple) else 1


def _other(error: BaseException, where: str) -> ShardingErrorExplained | None:
    message = str(error)
    unknown = _UNKNOWN_AXIS.search(message)
    if unknown:
        axis = unknown.group("axis")
        return ShardingErrorExplained(
            error_class=type(error).__name__,
            message=message,
            kind="other",
            where=where,
            spec=unknown.group("spec"),
            mesh_axes=[axis],
            explanation=(
                f"The spec names mesh axis '{axis}', but the mesh's axes are "
                f"{unknown.group('mesh')}: a spec can only name axes of its mesh."
            ),
            fix=(
                f"Use one of the mesh's axis names {unknown.group('mesh')}, "
                f"or add '{axis}' to the mesh."
            ),
        )
    rank = _RANK.search(message)
    asserted = _RANK_ASSERTED.fullmatch(message) if isinstance(error, AssertionError) else None
    if rank or asserted:
        if rank:
            spec, need, have = rank.group("spec"), int(rank.group("need")), int(rank.group("rank"))
        else:
            assert asserted is not None
            spec, have = asserted.group("spec"), int(asserted.group("rank"))
            entries = _spec_entries(spec)
            if entries is None or entries <= have:
                return None
            need = entries
        return ShardingErrorExplained(
            error_class=type(error).__name__,
            message=message,
            kind="other",
            where=where,
            spec=spec,
            explanation=(
                f"{spec} has {need} {'entry' if need == 1 else 'entries'}, one per array axis, "
                f"but the array has rank {have}."
            ),
            fix=(
                "Use P(): a scalar has no axis to split, so it can only be replicated on every "
                "device."
                if have == 0
                else f"Give at most {have} entries (trailing axes may be omitted: they are not "
                "split)."
            ),
        )
    return None


def explain_error(error: BaseException, where: str) -> ShardingErrorExplained | None:
    """A :class:`ShardingErrorExplained` for JAX's sharding errors (and for a spec naming an
    axis the mesh lacks, or longer than the array's rank), ``None`` for others."""
    name = type(error).__name__
    if name == "IndivisibleError" or "implies that array axis" in str(error):
        return _indivisible(error, where)
    if name == "DuplicateSpecError":
        return _duplicate(error, where)
    if name == "ShardingTypeError":
        return _sharding_type(error, where)
    return _other(error, where)
