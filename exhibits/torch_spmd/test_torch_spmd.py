"""The torch_spmd exhibit against torch_xla itself: the exhibit runs through the real sandbox
(`jaxscope run`, a torch worker); the truths are numpy (the tile assignment from the mesh and the
spec, as the OpSharding definition says; each shard as a slice of the CPU tensor), eager CPU torch
(the outputs), and the same steps as a plain script in a fresh torch-venv process (the runtime's
sharding text, the pending HLO, the partitioned programs). Skipped, with the reason, where the
torch venv is not installed.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jaxscope.protocol import EventBase, RunFailed, RunFinished
from jaxscope.sandbox.kinds import kind_problem

from exhibits import torch_testing
from exhibits.torch_testing import parse_events, run_truth

from .artefacts import collective_lines, tile_lines
from .events import (
    SpmdArgSharded,
    SpmdHloAnnotated,
    SpmdMeshBuilt,
    SpmdProgramPartitioned,
    SpmdResultCompared,
)

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"
GOLDEN = HERE / "golden"

pytestmark = pytest.mark.skipif(
    kind_problem("torch") is not None, reason=str(kind_problem("torch"))
)

# The truth: the snippet as a user's plain torch_xla SPMD script (its own mesh, mark_sharding,
# f, sync, .cpu()), XLA dumping to a folder of its own; it prints what torch_xla says.
PLAIN = r"""
import glob, json, math, os, sys, tempfile
ns = {}
exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
n = math.prod(ns["mesh_shape"])
dump = tempfile.mkdtemp()
os.environ["CPU_NUM_DEVICES"] = str(n)
os.environ["XLA_FLAGS"] = "--xla_dump_to=" + dump
import numpy as np, torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.spmd as xs
import torch_xla.runtime as xr
xr.use_spmd()
mesh = xs.Mesh(np.array(ns.get("device_ids", range(n))), ns["mesh_shape"], ns.get("axis_names"))
moved, specs = [], []
for a, spec in zip(ns["args"], ns["partition_specs"]):
    t = a.to("xla")
    if spec is not None:
        xs.mark_sharding(t, mesh, spec)
        specs.append(torch_xla._XLAC._get_xla_sharding_spec(t))
    moved.append(t)
out = ns["f"](*moved)
outs = list(out) if isinstance(out, (tuple, list)) else [out]
hlo = torch_xla._XLAC._get_xla_tensors_hlo(outs)
torch_xla.sync(); xm.wait_device_ops()
out_specs = [torch_xla._XLAC._get_xla_sharding_spec(t) for t in outs]
values = [t.cpu().tolist() for t in outs]
programs = [open(p).read() for p in sorted(glob.glob(dump + "/*.cpu_after_optimizations.txt"))]
settings = {k: ns.get(k) for k in ("mesh_shape", "axis_names", "device_ids", "partition_specs")}
if settings["device_ids"] is not None:
    settings["device_ids"] = list(settings["device_ids"])
print(json.dumps({"settings": settings, "args": [a.tolist() for a in ns["args"]],
                  "specs": specs, "hlo": hlo, "out_specs": out_specs, "values": values,
                  "programs": programs}))
"""


def plain(example: str) -> dict[str, Any]:
    """The plain script's truth of ``example``: one fresh torch process per example and test
    process (matmul_2x4's is read by the module's case and the CLI test; ~5 s each), a copy for
    each caller."""
    return copy.deepcopy(_plain(example))


@functools.cache
def _plain(example: str) -> dict[str, Any]:
    return run_truth(PLAIN, EXAMPLES / f"{example}.py")


def jaxscope_run(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return torch_testing.jaxscope_run(EXHIBIT, path, *extra)


def golden(example: str) -> list[EventBase]:
    return parse_events((GOLDEN / f"{example}.events.jsonl").read_text())


def _tuples(spec: Any) -> Any:
    """A partition spec read back from JSON: its lists as the tuples the snippet wrote."""
    return None if spec is None else tuple(tuple(e) if isinstance(e, list) else e for e in spec)


def snippet(truth: dict[str, Any]) -> dict[str, Any]:
    """The example's mesh settings as the plain script read them."""
    settings = dict(truth["settings"])
    settings["partition_specs"] = [_tuples(s) for s in settings["partition_specs"]]
    return {k: v for k, v in settings.items() if v is not None}


def expected_tiles(settings: dict[str, Any], spec: tuple[Any, ...]) -> np.ndarray:
    """The tile assignment as the OpSharding definition gives it: the logical mesh
    (``device_ids`` reshaped to ``mesh_shape``) transposed so that the mesh axes the spec names
    come first, in the spec's order, then the others; axes grouped in one spec entry merged."""
    shape = tuple(settings["mesh_shape"])
    names = list(settings.get("axis_names") or range(len(shape)))
    ids = np.array(settings.get("device_ids", range(math.prod(shape))))
    logical = ids.reshape(shape)
    groups = [
        [names.index(a) for a in (e if isinstance(e, tuple) else (e,))]
        for e in spec
        if e is not None
    ]
    named = [a for g in groups for a in g]
    moved = logical.transpose(named + [a for a in range(len(shape)) if a not in named])
    merged, start = [], 0
    for g in groups:
        merged.append(math.prod(moved.shape[start : start + len(g)]))
        start += len(g)
    return moved.reshape(merged + list(moved.shape[len(named) :]))


EXAMPLES_ALL = ("matmul_2x4", "transposed_2x2", "rows_over_all")
# The all-reduce each example's f needs runs over this mesh axis (None: f needs none).
REDUCED_AXIS = {"matmul_2x4": "model", "transposed_2x2": "model", "rows_over_all": None}


@pytest.fixture(scope="module", params=EXAMPLES_ALL)
def case(request: pytest.FixtureRequest) -> tuple[str, list[EventBase], dict[str, Any]]:
    example = str(request.param)
    done = jaxscope_run(EXAMPLES / f"{example}.py", "--json")
    events = parse_events(done.stdout)
    assert isinstance(events[-1], RunFinished), done.stdout[-2000:] + done.stderr[-2000:]
    return example, events, plain(example)


def test_golden_is_the_probe(case: tuple[str, list[EventBase], dict[str, Any]]) -> None:
    """The golden holds the events the probe emits now (run ids, times and the dump's module
    numbers aside)."""
    example, events, _ = case

    def stable(evs: list[EventBase]) -> list[str]:
        return [
            json.dumps(e.model_dump(exclude={"seq", "run_id", "duration_ms"}), sort_keys=True)
            for e in evs
            if not isinstance(e, RunFinished)
        ]

    assert stable(golden(example)) == stable(events)


def test_mesh_and_tile_assignments_equal_numpy(
    case: tuple[str, list[EventBase], dict[str, Any]],
) -> None:
    example, events, truth = case
    settings = snippet(truth)
    n = math.prod(settings["mesh_shape"])
    mesh = next(e for e in events if isinstance(e, SpmdMeshBuilt))
    assert mesh.device_count == n
    assert mesh.runtime_devices == [f"CPU:{i}" for i in range(n)]
    assert mesh.xla_devices == ["SPMD:0"]
    assert mesh.logical_mesh == list(settings.get("device_ids", range(n)))
    sharded = [e for e in events if isinstance(e, SpmdArgSharded)]
    specs = settings["partition_specs"]
    assert [e.index for e in sharded] == [i for i, s in enumerate(specs) if s is not None]
    for e in sharded:
        want = expected_tiles(settings, specs[e.index])
        assert e.tile_shape == list(want.shape), example
        assert e.tile_assignment == want.reshape(-1).tolist(), example


def test_shards_are_numpy_slices_at_the_tile_assignments_places(
    case: tuple[str, list[EventBase], dict[str, Any]],
) -> None:
    """Each device's shard: its index is the block of the tile the assignment gives that device
    (tile coordinates times the block size), and its values are that slice of the CPU tensor."""
    example, events, truth = case
    settings = snippet(truth)
    for e in (x for x in events if isinstance(x, SpmdArgSharded)):
        full = np.array(truth["args"][e.index])
        spec = settings["partition_specs"][e.index]
        tiles = expected_tiles(settings, spec)
        rank = full.ndim
        # The k-th spec entry that names mesh axes is tile dimension k; the tile dimensions after
        # them are replication (devices holding the same block).
        tiled = [d for d, entry in enumerate(spec) if entry is not None]
        tile_dims = [1] * rank
        for k, d in enumerate(tiled):
            tile_dims[d] = tiles.shape[k]
        assert len(e.shards) == math.prod(settings["mesh_shape"])
        for shard in e.shards:
            device = int(shard.device.split(":")[1])
            place = np.argwhere(tiles == device)[0]
            coords = [0] * rank
            for k, d in enumerate(tiled):
                coords[d] = int(place[k])
            blocks = [full.shape[d] // tile_dims[d] for d in range(rank)]
            want_index = [[c * b, (c + 1) * b] for c, b in zip(coords, blocks, strict=True)]
            assert shard.index == want_index, (example, shard.device)
            block = full[tuple(slice(a, b) for a, b in want_index)]
            assert shard.values == block.reshape(-1).tolist()


def test_outputs_equal_cpu_torch_and_the_plain_script(
    case: tuple[str, list[EventBase], dict[str, Any]],
) -> None:
    _, events, truth = case
    result = next(e for e in events if isinstance(e, SpmdResultCompared))
    # One sync: one program compiled and run on all devices at once; one gather per sharded
    # output's .cpu() (a program of its own, ReplicateShardedData).
    assert (result.executions, result.compiles) == (1, 1)
    assert result.gathers == sum(1 for s in truth["out_specs"] if s)
    assert len(result.outputs) == len(truth["values"])
    for out, want, spec in zip(result.outputs, truth["values"], truth["out_specs"], strict=True):
        assert np.allclose(np.array(out.values).reshape(out.shape), np.array(want), atol=1e-4)
        assert out.max_abs_diff is not None and out.max_abs_diff < 1e-4
        assert out.allclose
        assert out.sharding == spec
        for shard in out.shards:
            block = np.array(want)[tuple(slice(a, b) for a, b in shard.index)]
            assert np.allclose(np.array(shard.values), block.reshape(-1), atol=1e-4)


def test_hlo_and_shardings_equal_torch_xlas_own(
    case: tuple[str, list[EventBase], dict[str, Any]],
) -> None:
    _, events, truth = case
    assert [e.sharding for e in events if isinstance(e, SpmdArgSharded)] == truth["specs"]
    hlo = next(e for e in events if isinstance(e, SpmdHloAnnotated))
    assert hlo.hlo == truth["hlo"]
    assert len(hlo.annotations) == truth["hlo"].count("sharding={")
    # Under SPMD an argument left unannotated is a replicated parameter.
    params = [a.sharding for a in hlo.annotations if a.opcode == "parameter"]
    assert sorted(p for p in params if p != "{replicated}") == sorted(truth["specs"])
    for a in hlo.annotations:
        assert f"%{a.instruction} = " in hlo.hlo.splitlines()[a.line - 1]
        assert f"sharding={a.sharding}" in hlo.hlo.splitlines()[a.line - 1]
    programs = [e for e in events if isinstance(e, SpmdProgramPartitioned)]
    assert [p.hlo for p in programs] == truth["programs"]
    settings = snippet(truth)
    assert all(p.num_partitions == math.prod(settings["mesh_shape"]) for p in programs)


def test_the_all_reduce_runs_over_the_reduced_mesh_axis(
    case: tuple[str, list[EventBase], dict[str, Any]],
) -> None:
    """The sync's program all-reduces within the groups of devices that differ only in the
    mesh axis f contracts or sums over: from the logical mesh in numpy."""
    example, events, truth = case
    settings = snippet(truth)
    program = next(e for e in events if isinstance(e, SpmdProgramPartitioned))
    reduces = [c for c in program.collectives if c.opcode == "all-reduce"]
    axis = REDUCED_AXIS[example]
    if axis is None:
        assert reduces == []
        return
    shape = tuple(settings["mesh_shape"])
    logical = np.array(settings.get("device_ids", range(math.prod(shape)))).reshape(shape)
    at = list(settings["axis_names"]).index(axis)
    want = np.moveaxis(logical, at, -1).reshape(-1, shape[at])
    assert len(reduces) == 1
    assert sorted(sorted(g) for g in reduces[0].replica_groups) == sorted(
        sorted(g) for g in want.tolist()
    )


def test_cli_prints_tiles_hlo_and_collectives() -> None:
    example = "matmul_2x4"
    events = golden(example)
    tiles = jaxscope_run(EXAMPLES / f"{example}.py", "--print", "tiles")
    assert tiles.returncode == 0, tiles.stderr
    truth = plain(example)
    settings = snippet(truth)
    want = []
    for e in events:
        if isinstance(e, SpmdArgSharded):
            t = expected_tiles(settings, settings["partition_specs"][e.index])
            want.append(
                f"args[{e.index}] {settings['partition_specs'][e.index]!r} -> "
                f"tile_assignment{list(t.shape)} " + " ".join(map(str, t.reshape(-1).tolist()))
            )
    got = tiles.stdout.strip().splitlines()
    assert [line.split(" ", 4)[:4] for line in got] == [w.split(" ", 4)[:4] for w in want]
    assert [line.startswith(w) for line, w in zip(got, want, strict=True)] == [True] * len(want)
    assert got == tile_lines(events)
    hlo = jaxscope_run(EXAMPLES / f"{example}.py", "--print", "hlo")
    assert hlo.stdout.rstrip("\n") == truth["hlo"].rstrip("\n")
    coll = jaxscope_run(EXAMPLES / f"{example}.py", "--print", "collectives")
    assert coll.stdout.strip().splitlines() == collective_lines(events)
    assert "all-reduce f32[2,4]{1,0} groups={{0,1,2,3},{4,5,6,7}}" in coll.stdout


BROKEN = {
    "no mesh": (
        "import torch\ndef f(x):\n    return x\nargs = (torch.ones(4),)\n",
        None,
        "mesh_shape",
    ),
    "too many devices": (
        "import torch\nmesh_shape = (4, 4)\npartition_specs = [(0,)]\n"
        "def f(x):\n    return x\nargs = (torch.ones(4),)\n",
        2,
        "at most 8",
    ),
    "spec rank": (
        "import torch\nmesh_shape = (4,)\naxis_names = ('x',)\npartition_specs = [('x', None)]\n"
        "def f(x):\n    return x\nargs = (torch.ones(4),)\n",
        4,
        "one entry per dimension",
    ),
    "unknown axis": (
        "import torch\nmesh_shape = (4,)\naxis_names = ('x',)\npartition_specs = [('y',)]\n"
        "def f(x):\n    return x\nargs = (torch.ones(4),)\n",
        4,
        "Axis name y",
    ),
    "client made at load": (
        "import torch, torch_xla\nmesh_shape = (4,)\npartition_specs = [None]\n"
        "def f(x):\n    return x\nargs = (torch.ones(4, device=torch_xla.device()),)\n",
        None,
        "PJRT client exists already",
    ),
    "f raises": (
        "import torch\nmesh_shape = (2,)\npartition_specs = [(0,)]\n"
        "def f(x):\n    raise ValueError('boom')\nargs = (torch.ones(4),)\n",
        5,
        "boom",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_bad_snippets_fail_at_their_line(name: str) -> None:
    source, line, text = BROKEN[name]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(source)
    try:
        done = jaxscope_run(Path(handle.name), "--json")
    finally:
        os.unlink(handle.name)
    events = parse_events(done.stdout)
    failed = events[-1]
    assert isinstance(failed, RunFailed), done.stdout[-1500:]
    assert text in failed.message, failed.message
    if line is not None:
        assert failed.source is not None and failed.source.line == line
