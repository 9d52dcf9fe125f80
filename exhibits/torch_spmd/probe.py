"""The torch_spmd exhibit's probe (PyTorch/XLA track, design 0040; runs in a torch worker).

The snippet defines ``f``, ``args`` (CPU tensors) and the mesh as data: ``mesh_shape``,
optionally ``axis_names`` and ``device_ids`` (a permutation of ``range(n)``), and
``partition_specs``, one spec per argument (``None``: leave it unannotated). The probe

1. sets ``CPU_NUM_DEVICES`` to the mesh's size and ``XLA_FLAGS=--xla_dump_to=...`` for this
   run's process before the PJRT client exists (:func:`torch_internals.set_client_env`), calls
   ``torch_xla.runtime.use_spmd()`` and builds ``xs.Mesh``;
2. moves each argument to the device and calls ``xs.mark_sharding``: its tile assignment
   (``Mesh._get_op_sharding_args``), the runtime's sharding text and each device's shard;
3. calls ``f``: the pending HLO with its ``sharding=`` annotations;
4. ``torch_xla.sync()`` and ``.cpu()`` of each output: the programs XLA compiled, read back
   from its dump (the per-device HLO, the collectives the SPMD partitioner inserted), each
   device's shard of the outputs, and the values against ``f`` in eager CPU torch.

Public torch_xla API except the sharding text and the tile assignment, which come through
:mod:`jaxscope.torch_internals`.
"""

from __future__ import annotations

import glob
import math
import os
import re
import tempfile
from typing import Any

from jaxscope.exhibit_api import InvalidSnippet, ProbeContext, blame_line, setting_line
from jaxscope.exhibit_api import torch_internals as ti

from .events import (
    SpmdAnnotation,
    SpmdArgSharded,
    SpmdCollective,
    SpmdHloAnnotated,
    SpmdMeshBuilt,
    SpmdOutputView,
    SpmdProgramPartitioned,
    SpmdResultCompared,
    SpmdShardView,
)

# A shard's (or an output's) values are sent up to this many elements; past it, only its index.
MAX_SHOWN_VALUES = 256
# Virtual CPU devices a mesh may have (the 4-8; 1-8 accepted).
MAX_DEVICES = 8
COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
)
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s([\w\-]+)\(")
_COLLECTIVE = re.compile(
    r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\("
)


def _braced(text: str, start: int) -> str:
    """The balanced ``{...}`` that starts at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def sharding_annotations(hlo: str) -> list[SpmdAnnotation]:
    """Every instruction of ``hlo`` with a ``sharding={...}`` attribute."""
    found = []
    for number, line in enumerate(hlo.splitlines(), 1):
        at = line.find("sharding={")
        head = _INSTRUCTION.match(line)
        if at < 0 or head is None:
            continue
        found.append(
            SpmdAnnotation(
                instruction=head.group(1),
                opcode=head.group(3),
                sharding=_braced(line, at + len("sharding=")),
                line=number,
            )
        )
    return found


def collectives(hlo: str) -> list[SpmdCollective]:
    """The collectives of a partitioned program's HLO, with their device groups."""
    found = []
    for number, line in enumerate(hlo.splitlines(), 1):
        head = _COLLECTIVE.match(line)
        if head is None:
            continue
        groups: list[list[int]] = []
        text = ""
        for key in ("replica_groups=", "source_target_pairs="):
            at = line.find(key)
            if at < 0:
                continue
            rest = line[at + len(key) :]
            if rest.startswith("{"):
                text = _braced(rest, 0)
                groups = [
                    [int(d) for d in g.split(",") if d.strip()]
                    for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1])
                ]
            else:
                text = rest.split(", ")[0]
            break
        found.append(
            SpmdCollective(
                instruction=head.group(1),
                opcode=head.group(3),
                result=head.group(2).strip(),
                replica_groups=groups,
                groups_text=text,
                line=number,
            )
        )
    return found


def _settings(
    ctx: ProbeContext,
) -> tuple[tuple[int, ...], tuple[str, ...] | None, list[int], list[Any]]:
    """The snippet's mesh and specs, checked; a wrong one fails at the line that sets it."""
    ns, source = ctx.snippet.namespace, ctx.snippet.source

    def bad(name: str, message: str) -> BaseException:
        return blame_line(InvalidSnippet(message), setting_line(source, name))

    if "mesh_shape" not in ns:
        raise InvalidSnippet(
            "the snippet must define `mesh_shape`, the device mesh's shape (e.g. "
            "`mesh_shape = (2, 4)` for 8 virtual CPU devices), and `partition_specs`, one "
            "partition spec per argument (e.g. `partition_specs = [('data', None)]`)"
        )
    shape = ns["mesh_shape"]
    if (
        not isinstance(shape, (tuple, list))
        or not shape
        or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)
    ):
        raise bad("mesh_shape", f"`mesh_shape` must be a tuple of positive ints, got {shape!r}")
    mesh_shape = tuple(shape)
    n = math.prod(mesh_shape)
    if n > MAX_DEVICES:
        raise bad(
            "mesh_shape",
            f"`mesh_shape` {mesh_shape} needs {n} devices; this exhibit runs on at most "
            f"{MAX_DEVICES} virtual CPU devices",
        )
    names = ns.get("axis_names")
    axis_names: tuple[str, ...] | None = None
    if names is not None:
        if (
            not isinstance(names, (tuple, list))
            or len(names) != len(mesh_shape)
            or not all(isinstance(a, str) for a in names)
            or len(set(names)) != len(names)
        ):
            raise bad(
                "axis_names",
                f"`axis_names` must be {len(mesh_shape)} distinct strs, one per mesh axis, "
                f"got {names!r}",
            )
        axis_names = tuple(names)
    ids = ns.get("device_ids", list(range(n)))
    if not isinstance(ids, (tuple, list, range)) or sorted(ids) != list(range(n)):
        raise bad(
            "device_ids",
            f"`device_ids` must list each of the {n} devices 0..{n - 1} once, got {ids!r}",
        )
    specs = ns.get("partition_specs")
    args = ctx.snippet.args
    if not isinstance(specs, (tuple, list)) or len(specs) != len(args):
        raise bad(
            "partition_specs",
            f"`partition_specs` must be a list with one partition spec per argument "
            f"({len(args)}), each a tuple of mesh axes (or None) per dimension, or None to "
            f"leave that argument unannotated; got {specs!r}",
        )
    import torch

    for i, (spec, arg) in enumerate(zip(specs, args, strict=True)):
        if spec is None:
            continue
        if not isinstance(arg, torch.Tensor):
            raise bad(
                "partition_specs",
                f"partition_specs[{i}] shards args[{i}], which is a {type(arg).__name__}, "
                "not a tensor; write None there",
            )
        if not isinstance(spec, tuple) or len(spec) != arg.dim():
            raise bad(
                "partition_specs",
                f"partition_specs[{i}] must be a tuple with one entry per dimension of "
                f"args[{i}] (shape {tuple(arg.shape)}), got {spec!r}",
            )
    return mesh_shape, axis_names, [int(d) for d in ids], list(specs)


def _flat(value: Any) -> list[float]:
    """The tensor's values as floats, row-major (empty past :data:`MAX_SHOWN_VALUES`)."""
    if value.numel() > MAX_SHOWN_VALUES:
        return []
    return [float(v) for v in value.detach().to("cpu").double().reshape(-1).tolist()]


def _shards(sharded: Any) -> list[SpmdShardView]:
    """Each device's shard of an ``XLAShardedTensor`` (its padding removed)."""
    views = []
    for shard in sharded.local_shards:
        index = [] if shard.indices is Ellipsis else [[s.start, s.stop] for s in shard.indices]
        data = shard.data
        if index:
            data = data[tuple(slice(0, stop - start) for start, stop in index)]
        views.append(
            SpmdShardView(
                device=str(shard.shard_device),
                replica_id=int(shard.replica_id),
                index=index,
                shape=list(data.shape),
                values=_flat(data),
            )
        )
    return views


def _permutation(mesh_rank: int, spec: tuple[int | tuple[int, ...] | None, ...]) -> list[int]:
    """The mesh-axis order ``_get_tile_assignment`` transposes the logical mesh by: the axes the
    (index-translated) spec names, in order, then the others."""
    named: list[int] = []
    for entry in spec:
        if entry is None:
            continue
        named += list(entry) if isinstance(entry, tuple) else [entry]
    return named + sorted(set(range(mesh_rank)) - set(named))


def _spec_indices(mesh: Any, spec: tuple[Any, ...]) -> tuple[Any, ...]:
    def index(axis: Any) -> int:
        if isinstance(axis, int) and not isinstance(axis, bool):
            return axis
        found = mesh.get_axis_name_idx(axis) if mesh.axis_names is not None else None
        if found is None:
            raise ValueError(f"Axis name {axis} is not defined in the given mesh")
        return int(found)

    return tuple(
        None if e is None else tuple(index(a) for a in e) if isinstance(e, tuple) else index(e)
        for e in spec
    )


def _dumped(directory: str, seen: set[str]) -> list[str]:
    """The after-optimizations HLO files XLA dumped since ``seen`` (oldest first)."""
    files = sorted(glob.glob(os.path.join(directory, "*.cpu_after_optimizations.txt")))
    new = [path for path in files if path not in seen]
    seen.update(new)
    return new


def _partitioned(path: str, cause: str) -> SpmdProgramPartitioned:
    with open(path) as handle:
        hlo = handle.read()
    first = hlo.splitlines()[0] if hlo else ""
    module = first.split()[1].rstrip(",") if first.startswith("HloModule ") else ""
    partitions = re.search(r"num_partitions=(\d+)", first)
    return SpmdProgramPartitioned(
        module=module,
        cause=cause,
        num_partitions=int(partitions.group(1)) if partitions else 1,
        hlo=hlo,
        collectives=collectives(hlo),
    )


def _counter(name: str) -> int:
    import torch_xla.debug.metrics as met

    return int(met.counter_value(name) or 0)


def run(ctx: ProbeContext) -> None:
    """Build the mesh, shard the arguments, run ``f`` under SPMD; emit each step."""
    import numpy as np
    import torch
    from torch.utils import _pytree as pytree

    mesh_shape, axis_names, device_ids, specs = _settings(ctx)
    f, args = ctx.snippet.f, tuple(ctx.snippet.args)
    n = math.prod(mesh_shape)
    dump = tempfile.mkdtemp(prefix="spmd-dump-")
    with ctx.stage("client"):
        flags = os.environ.get("XLA_FLAGS", "")
        try:
            ti.set_client_env(
                {
                    "CPU_NUM_DEVICES": str(n),
                    "XLA_FLAGS": f"{flags} --xla_dump_to={dump}".strip(),
                }
            )
        except ti.ClientExists as exc:
            raise InvalidSnippet(
                f"{exc}: the snippet made an XLA tensor (or asked for a device) while it "
                f"loaded. This exhibit creates the client with CPU_NUM_DEVICES={n} from "
                "`mesh_shape`: define the mesh as data (`mesh_shape`, `axis_names`, "
                "`partition_specs`) and `args` as CPU tensors, and let the exhibit build "
                "xs.Mesh and move them"
            ) from None
        import torch_xla
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.spmd as xs
        import torch_xla.runtime as xr

        xr.use_spmd()
        mesh = xs.Mesh(np.array(device_ids), mesh_shape, axis_names)
        device = torch_xla.device()
        ctx.emit(
            SpmdMeshBuilt(
                device_count=int(xr.global_runtime_device_count()),
                runtime_devices=[str(d["name"]) for d in xr.global_runtime_device_attributes()],
                xla_devices=ti.real_devices([str(device)]),
                mesh_shape=list(mesh_shape),
                axis_names=list(axis_names)
                if axis_names
                else [str(i) for i in range(len(mesh_shape))],
                device_ids=device_ids,
                logical_mesh=[int(d) for d in mesh.get_logical_mesh().reshape(-1)],
            )
        )
        moved: list[Any] = []
        for i, (arg, spec) in enumerate(zip(args, specs, strict=True)):
            if not isinstance(arg, torch.Tensor):
                moved.append(arg)
                continue
            on_device = arg.to(device)
            moved.append(on_device)
            if spec is None:
                continue
            try:
                indices = _spec_indices(mesh, spec)
                tile, _groups, replication, kind = ti.op_sharding_args(mesh, spec)
                sharded = xs.mark_sharding(on_device, mesh, spec)
            except (AssertionError, ValueError) as exc:
                raise blame_line(exc, setting_line(ctx.snippet.source, "partition_specs")) from None
            tile_array = np.array(tile)
            ctx.emit(
                SpmdArgSharded(
                    index=i,
                    shape=list(arg.shape),
                    dtype=str(arg.dtype),
                    spec=repr(spec),
                    permutation=_permutation(len(mesh_shape), indices),
                    tile_shape=list(tile_array.shape),
                    tile_assignment=[int(d) for d in tile_array.reshape(-1)],
                    sharding_type=xs.ShardingType(kind).name,
                    replication_groups=[[int(d) for d in g] for g in replication],
                    sharding=ti.sharding_spec(on_device),
                    shards=_shards(sharded),
                )
            )
    with ctx.stage("lazy_trace"):
        out = f(*moved)
        outputs = [
            t
            for t in pytree.tree_leaves(out)
            if isinstance(t, torch.Tensor) and t.device.type == "xla"
        ]
        hlo = ti.hlo_text(outputs) if outputs else ""
        ctx.emit(SpmdHloAnnotated(hlo=hlo, annotations=sharding_annotations(hlo)))
    with ctx.stage("sync"):
        seen: set[str] = set()
        _dumped(dump, seen)
        before = (_counter("ExecuteReplicated"), _counter("UncachedCompile"))
        torch_xla.sync()
        xm.wait_device_ops()  # the shards are read below: the run must have finished
        after = (_counter("ExecuteReplicated"), _counter("UncachedCompile"))
        for path in _dumped(dump, seen):
            ctx.emit(_partitioned(path, "torch_xla.sync(): f's outputs"))
        shardings = [ti.sharding_spec(t) for t in outputs]
        shard_views = [
            _shards(xs.XLAShardedTensor(t)) if s else []
            for t, s in zip(outputs, shardings, strict=True)
        ]
        gathered = _counter("ReplicateShardedData")
        values = [t.cpu() for t in outputs]
        gathered = _counter("ReplicateShardedData") - gathered
        for path in _dumped(dump, seen):
            ctx.emit(_partitioned(path, ".cpu(): the sharded output gathered to the host"))
    with ctx.stage("call"):
        cpu_out = f(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        expected = [t for t in pytree.tree_leaves(cpu_out) if isinstance(t, torch.Tensor)]
    views = []
    for t, sharding, shards, value, want in zip(
        outputs, shardings, shard_views, values, expected, strict=False
    ):
        diff, close = None, False
        if value.shape == want.shape:
            diff = float((value.double() - want.double()).abs().max()) if value.numel() else 0.0
            close = bool(torch.allclose(value.double(), want.double(), rtol=1e-4, atol=1e-4))
        views.append(
            SpmdOutputView(
                shape=list(t.shape),
                dtype=str(t.dtype),
                sharding=sharding,
                shards=shards,
                values=_flat(value),
                max_abs_diff=diff,
                allclose=close,
            )
        )
    ctx.emit(
        SpmdResultCompared(
            outputs=views,
            executions=after[0] - before[0],
            compiles=after[1] - before[1],
            gathers=gathered,
        )
    )
