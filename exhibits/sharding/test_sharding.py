"""The sharding exhibit against JAX itself: per-device blocks vs ``addressable_shards``, the
collectives vs the compiled HLO, JAX's sharding errors explained, case C16, the CLI.

Needs 8 CPU devices: ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` is set here before
JAX's backend starts (as the worker does); run this file in a fresh process if another test
started the backend first.
"""

from __future__ import annotations

import os
from collections.abc import Callable

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    )

import json
import math
import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding, PartitionSpec
from jaxscope.protocol import JaxprStaged, RunOptions

from exhibits.conftest import CASES, FakeContext, run_probe
from exhibits.sharding.events import CollectivesFound, ShardingErrorExplained, ShardingPlaced
from exhibits.sharding.golden.regen import (
    EXAMPLES,
    collective_counts,
    golden,
    load,
    shards,
)
from exhibits.sharding.reading import expand_groups
from testkit import run_cli

GOLDEN = Path(__file__).resolve().parent / "golden"

# PartitionSpec's constructor is untyped
P: Callable[..., PartitionSpec] = PartitionSpec


@pytest.fixture(autouse=True, scope="module")
def _eight_devices() -> None:
    assert jax.device_count() >= 8, "run with XLA_FLAGS=--xla_force_host_platform_device_count=8"


def _run(path: Path, options: RunOptions | None = None) -> tuple[FakeContext, Exception | None]:
    """Run the probe; the user's exception (if any) is returned, with the events so far."""
    from jaxscope.sandbox.snippet import load_snippet

    from exhibits.sharding import probe

    ctx = FakeContext(snippet=load_snippet(path.read_text()), options=options or RunOptions())
    try:
        probe.run(ctx)
    except Exception as exc:  # the probe lets JAX's errors propagate
        return ctx, exc
    return ctx, None


def _as_golden(event: ShardingPlaced) -> list[dict[str, Any]]:
    return [
        {"device_id": s.device_id, "index": s.index, "shape": s.shape, "replica_id": s.replica_id}
        for s in event.shards
    ]


def _named(ctx: FakeContext, prefix: str) -> list[ShardingPlaced]:
    return [e for e in ctx.of_type(ShardingPlaced) if e.name.startswith(prefix)]


# --------------------------------------------------------------------------------------------
# Every example against its golden record (plain JAX) and JAX live
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_matches_plain_jax(path: Path) -> None:
    expect = json.loads((GOLDEN / f"{path.stem}.json").read_text())
    assert golden(path) == expect  # the committed golden is still what JAX says
    ctx, error = _run(path)
    if "error_class" in expect:
        assert error is not None
        assert type(error).__name__ == expect["error_class"]
        assert str(error).splitlines()[0] == expect["error_first_line"]
        explained = ctx.one(ShardingErrorExplained)
        assert explained.error_class == expect["error_class"]
        assert explained.message == str(error)
        return
    assert error is None, error
    assert _as_golden(_named(ctx, "args[0]")[0]) == expect["args0"]
    defines_spec = re.search(r"^spec\s*=", path.read_text(), re.M) is not None
    assert _named(ctx, "args[0]")[0].spec_origin == ("spec" if defines_spec else "default")
    assert [_as_golden(e) for e in _named(ctx, "output")] == expect["outputs"]
    assert [_as_golden(e) for e in _named(ctx, "jax.jit(f) output")] == expect["jit_outputs"]
    found = ctx.one(CollectivesFound)
    assert found.counts == expect["collectives"]
    lines = found.hlo.split("\n")
    for c in found.collectives:  # each listed collective is that line of the HLO
        assert c.text == lines[c.line].strip()
        assert f" {c.op}(" in c.text or f" {c.op}-start(" in c.text
    assert ctx.one(JaxprStaged).jaxpr.text


# --------------------------------------------------------------------------------------------
# A table of meshes and specs: per-device shapes and index ranges vs addressable_shards
# --------------------------------------------------------------------------------------------

AUTO2 = "(AxisType.Auto,) * 2"
TABLE: list[tuple[str, str, str]] = [
    # (mesh expression, spec expression, array shape)
    *(
        (f"jax.make_mesh((2, 4), ('x', 'y'), axis_types={AUTO2})", s, "(8, 16)")
        for s in ("P()", "P('x')", "P('y')", "P('x', 'y')", "P(('x', 'y'))", "P(None, ('x', 'y'))")
    ),  # the specs of C16_spec_table
    (f"jax.make_mesh((2, 4), ('x', 'y'), axis_types={AUTO2})", "P('y', 'x')", "(8, 6)"),
    ("jax.make_mesh((2, 4), ('x', 'y'))", "P('x', 'y')", "(8, 16)"),  # Explicit (default)
    ("jax.make_mesh((8,), ('d',))", "P(None, 'd')", "(3, 16)"),
    ("jax.make_mesh((2, 2, 2), ('x', 'y', 'z'))", "P('z', None, ('x', 'y'))", "(4, 3, 8)"),
    ("jax.make_mesh((2, 2, 2), ('x', 'y', 'z'))", "P('y')", "(2, 5, 1, 3)"),
    (
        "jax.make_mesh((4, 1), ('batch', 'fsdp'), devices=jax.devices()[:4])",
        "P(('batch', 'fsdp'))",
        "(20, 10, 32)",
    ),
    ("jax.make_mesh((2, 2), ('a', 'b'), devices=jax.devices()[4:])", "P('b', 'a')", "(4, 4)"),
    ("jax.make_mesh((4,), ('x',))", "P()", "()"),
]


@pytest.mark.parametrize(("mesh", "spec", "shape"), TABLE)
def test_table_of_meshes_and_specs(mesh: str, spec: str, shape: str) -> None:
    example = EXAMPLES[0].parent / "replicated_rows.py"  # f = a * 2
    options = RunOptions(mesh=mesh, spec=spec, array_shape=shape)
    ctx, error = _run(example, options)
    assert error is None, error
    env = {"jax": jax, "P": P, "AxisType": AxisType}
    mesh_value, spec_value = eval(mesh, env), eval(spec, env)
    dims = eval(shape)
    x = jax.device_put(
        np.arange(math.prod(dims), dtype=np.float32).reshape(dims),
        NamedSharding(mesh_value, spec_value),
    )
    event = _named(ctx, "args[0]")[0]
    assert _as_golden(event) == shards(x)
    assert event.shard_shape == list(x.sharding.shard_shape(x.shape))
    assert event.mesh_axes == list(mesh_value.axis_names)
    assert event.mesh_shape == list(mesh_value.devices.shape)
    assert event.axis_types == [t.name for t in mesh_value.axis_types]
    assert event.mesh_device_ids == [d.id for d in mesh_value.devices.flat]
    assert event.spec == str(spec_value)
    assert event.spec_origin == "options.spec"
    # replicas: devices holding the same index ranges, per JAX's shards
    by_index: dict[str, set[int]] = {}
    for s in x.addressable_shards:
        by_index.setdefault(str(s.index), set()).add(s.device.id)
    ids = {s.device_id: s.device for s in event.shards}
    for s in event.shards:
        same = next(v for v in by_index.values() if s.device_id in v)
        assert sorted(s.replica_of) == sorted(ids[i] for i in same - {s.device_id})
    assert _as_golden(_named(ctx, "output")[0]) == shards(x * 2)
    assert _as_golden(_named(ctx, "jax.jit(f) output")[0]) == shards(jax.jit(lambda a: a * 2)(x))


# --------------------------------------------------------------------------------------------
# Collectives: counts vs the compiled HLO, replica groups vs the mesh
# --------------------------------------------------------------------------------------------


def _mesh_groups(mesh_devices: np.ndarray[Any, Any], axis: int) -> list[list[int]]:
    """Device ids that differ only along ``axis`` of the mesh."""
    ids = np.vectorize(lambda d: d.id)(mesh_devices)
    moved = np.moveaxis(ids, axis, -1)
    return sorted(sorted(int(v) for v in row) for row in moved.reshape(-1, ids.shape[axis]))


@pytest.mark.parametrize(
    ("example", "axis"), [("sum_sharded_axis", 0), ("matmul_contracting", 1), ("rank3_blocks", 1)]
)
def test_all_reduce_groups_are_the_devices_along_the_reduced_mesh_axis(
    example: str, axis: int
) -> None:
    ns = load(EXAMPLES[0].parent / f"{example}.py")
    ctx, error = _run(EXAMPLES[0].parent / f"{example}.py")
    assert error is None
    (reduce,) = [c for c in ctx.one(CollectivesFound).collectives if c.op == "all-reduce"]
    assert reduce.groups is not None
    want = _mesh_groups(ns["mesh"].devices, axis)
    if example == "rank3_blocks":  # mean over axis 2, split over ('y', 'z') together
        ids = np.vectorize(lambda d: d.id)(ns["mesh"].devices)
        want = sorted(sorted(int(v) for v in ids[i].flat) for i in range(ids.shape[0]))
    assert sorted(sorted(g) for g in reduce.groups) == want


def test_collective_permute_pairs_are_the_source_target_pairs() -> None:
    ctx, _ = _run(EXAMPLES[0].parent / "roll.py")
    (permute,) = ctx.one(CollectivesFound).collectives
    assert permute.op == "collective-permute"
    assert permute.groups is not None
    assert all(len(p) == 2 for p in permute.groups)
    assert "{" + ",".join(f"{{{a},{b}}}" for a, b in permute.groups) + "}" in permute.text


def test_counts_equal_a_plain_regex_over_compiled_hlo_live() -> None:
    for name in ("sum_sharded_axis", "transpose", "replicated_output", "roll"):
        ctx, _ = _run(EXAMPLES[0].parent / f"{name}.py")
        found = ctx.one(CollectivesFound)
        assert found.counts == collective_counts(found.hlo) != {}
        ns = load(EXAMPLES[0].parent / f"{name}.py")
        x = jax.device_put(ns["args"][0], NamedSharding(ns["mesh"], ns["spec"]))
        compiled = jax.jit(ns["f"]).lower(x).compile()
        assert found.counts == collective_counts(str(compiled.as_text()))
        assert found.output_shardings == [
            str(s) for s in jax.tree.leaves(compiled.output_shardings)
        ]
        assert found.input_shardings == [str(x.sharding)]


def test_iota_replica_groups_expand_as_numpy_says() -> None:
    ids = np.arange(8)
    assert expand_groups("[4,2]<=[8]") == ids.reshape(4, 2).tolist()
    assert expand_groups("[2,4]<=[4,2]T(1,0)") == ids.reshape(4, 2).T.reshape(2, 4).tolist()
    assert expand_groups("{{0,1},{2,3}}") == [[0, 1], [2, 3]]
    assert expand_groups("mesh['axis_0'=2,'axis_1'=4] {'axis_1'}") == ids.reshape(2, 4).tolist()
    assert expand_groups("mesh['axis_0'=2,'axis_1'=4] {'zz'}") is None


def _groups_by_coordinates(
    sizes: list[int], ids: np.ndarray[Any, Any], grouped: dict[int, list[tuple[int, int] | None]]
) -> set[frozenset[int]]:
    """The same partition from its definition rather than XLA's reshape/transpose: two devices
    share a group when every mesh coordinate agrees except the grouped (sub-)coordinates; the
    sub-coordinate (pre, size) of coordinate c on an axis of size n is (c // (n // (pre*size)))
    % size."""

    def key(coords: tuple[int, ...]) -> tuple[int, ...]:
        out: list[int] = []
        for axis, c in enumerate(coords):
            pieces = grouped.get(axis)
            if pieces is None:
                out.append(c)  # not grouped: must agree
            elif pieces != [None]:  # sub-axes: what they do not cover must agree
                rest = c
                for pre, size in (p for p in pieces if p is not None):
                    post = sizes[axis] // (pre * size)
                    rest -= ((c // post) % size) * post
                out.append(rest)
        return tuple(out)

    parts: dict[tuple[int, ...], set[int]] = {}
    for coords in np.ndindex(*sizes):
        parts.setdefault(key(coords), set()).add(int(ids[coords]))
    return {frozenset(g) for g in parts.values()}


def test_mesh_replica_groups_with_sub_axes_expand_as_xla_defines_them() -> None:
    # XLA's own comment (replica_group.cc): @mesh<a=8> {a:(1)2} reshapes [8] -> [1,2,4] and
    # groups over the 2: devices 4 apart; {a:(1)2, a:(4)2} reshapes to [2,2,2], groups over 0, 2.
    assert expand_groups("mesh['a'=8] {'a':(1)2}") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert expand_groups("mesh['a'=8] {'a':(1)2,'a':(4)2}") == [[0, 1, 4, 5], [2, 3, 6, 7]]
    # XLA's replica_group_test.cc counts: mesh [2, 6, 10], {axis1:(1)2} -> 60 groups of 2,
    # {axis2:(2)3} -> 40 groups of 3; mesh [6, 35, 143] with three sub-axes each.
    mesh = "mesh['axis1'=2,'axis2'=6,'axis3'=10]"
    for group, count, size in (("{'axis1':(1)2}", 60, 2), ("{'axis2':(2)3}", 40, 3)):
        got = expand_groups(f"{mesh} {group}")
        assert got is not None and (len(got), len(got[0])) == (count, size)
    big = "mesh['alpha'=6,'beta'=35,'gamma'=143]"
    for group, count, size in (
        ("{'alpha':(1)2,'beta':(1)5,'gamma':(1)11}", 3 * 7 * 13, 2 * 5 * 11),
        ("{'alpha':(2)3,'beta':(5)7,'gamma':(11)13}", 2 * 5 * 11, 3 * 7 * 13),
    ):
        got = expand_groups(f"{big} {group}")
        assert got is not None and (len(got), len(got[0])) == (count, size)
    # Membership from the definition (coordinates), with a device_ids permutation as compiled
    # HLO prints it (the transpose example's all-to-all).
    text = "mesh['axis_0'=4,'axis_1'=2], device_ids=([2,2,2]T(0,2,1)) {'axis_0':(2)2}"
    got = expand_groups(text)
    ids = np.arange(8).reshape(2, 2, 2).transpose(0, 2, 1).reshape(4, 2)
    assert got is not None
    assert {frozenset(g) for g in got} == _groups_by_coordinates([4, 2], ids, {0: [(2, 2)]})
    assert sorted(d for g in got for d in g) == list(range(8))
    text = "mesh['a'=4,'b'=6] {'a':(2)2,'b':(1)3}"
    got = expand_groups(text)
    ids = np.arange(24).reshape(4, 6)
    assert got is not None
    assert {frozenset(g) for g in got} == _groups_by_coordinates(
        [4, 6], ids, {0: [(2, 2)], 1: [(1, 3)]}
    )


# --------------------------------------------------------------------------------------------
# Shape errors explained
# --------------------------------------------------------------------------------------------


def test_indivisible_spec_names_axis_and_sizes() -> None:
    options = RunOptions(spec="P(None, ('x', 'y'))", array_shape="(8, 12)")
    ctx, error = _run(EXAMPLES[0].parent / "sum_sharded_axis.py", options)
    assert type(error).__name__ == "IndivisibleError"
    ev = ctx.one(ShardingErrorExplained)
    mesh = load(EXAMPLES[0].parent / "sum_sharded_axis.py")["mesh"]
    assert (ev.kind, ev.where, ev.axis, ev.dim_size) == ("indivisible", "args[0]", 1, 12)
    assert ev.mesh_axes == ["x", "y"]
    assert ev.mesh_axis_sizes == [mesh.shape["x"], mesh.shape["y"]]
    assert ev.partitions == mesh.shape["x"] * mesh.shape["y"]
    assert ev.shape == [8, 12]
    assert "16" in ev.fix  # the next multiple of 8
    assert ctx.of_type(ShardingPlaced) == []


def test_duplicate_axis_and_explicit_ambiguity_explained() -> None:
    ctx, error = _run(EXAMPLES[0].parent / "duplicate_axis.py")
    assert type(error).__name__ == "DuplicateSpecError"
    ev = ctx.one(ShardingErrorExplained)
    assert (ev.kind, ev.mesh_axes, ev.spec) == ("duplicate_axis", ["x"], "P('x', 'x')")

    ctx, error = _run(EXAMPLES[0].parent / "explicit_matmul_ambiguous.py")
    assert type(error).__name__ == "ShardingTypeError"
    ev = ctx.one(ShardingErrorExplained)
    assert (ev.kind, ev.where) == ("sharding_type", "f")
    assert "out_sharding" in ev.fix
    assert _named(ctx, "args[0]")[0].axis_types == ["Explicit", "Explicit"]

    # the fix works: the same matmul with out_sharding compiles, output sharded as asked
    ctx, error = _run(EXAMPLES[0].parent / "explicit_matmul_fixed.py")
    assert error is None
    assert _named(ctx, "output")[0].spec == str(P("x", None))
    assert "8@x" in ctx.one(JaxprStaged).jaxpr.text  # Explicit: the sharding is in the type


# --------------------------------------------------------------------------------------------
# Case C16
# --------------------------------------------------------------------------------------------


def test_c16_broken_reproduces() -> None:
    expect = json.loads((CASES / "C16_indivisible_broken.expect.json").read_text())
    ctx, error = _run(CASES / "C16_indivisible_broken.py")
    assert type(error).__name__ == expect["error_class"]
    assert str(error) == expect["error_message"]
    ev = ctx.one(ShardingErrorExplained)
    assert (ev.where, ev.axis, ev.dim_size, ev.partitions) == ("f", 0, 19, 4)
    assert ev.mesh_axes == expect["mesh"]["axis_names"]
    assert ev.mesh_axis_sizes == expect["mesh"]["shape"]
    assert "20" in ev.fix  # pad 19 to 20, as the fixed case does
    # the spec JAX refused, as its message prints it (the view names it beside the grid)
    assert ev.spec is not None and f"spec={ev.spec}, memory_kind" in expect["error_message"]
    # the grid shows args[0] as placed before f: the snippet defines no `spec`, so P()
    assert "spec" not in expect["snippet_names"]
    placed = _named(ctx, "args[0]")[0]
    assert (placed.spec, placed.spec_origin) == (str(P()), "default")


@pytest.mark.parametrize("case", ["C16_indivisible_fixed", "C16_spec_table"])
def test_c16_fixed_and_spec_table_reproduce(case: str) -> None:
    expect = json.loads((CASES / f"{case}.expect.json").read_text())
    ctx, error = _run(CASES / f"{case}.py")
    assert error is None
    outputs = _named(ctx, "output")
    assert len(outputs) == len(expect["outputs_sharding"])
    for event, want in zip(outputs, expect["outputs_sharding"], strict=True):
        assert event.spec == want["spec"]
        assert event.shape == want["global_shape"]
        assert event.shard_shape == want["shard_shape"]
        assert [s.device_id for s in event.shards] == want["device_ids"]
        assert [s.shape for s in event.shards] == want["per_device_shapes"]
        ranges = ["[" + ", ".join(f"{a}:{b}" for a, b in s.index) + "]" for s in event.shards]
        assert ranges == want["per_device_index"]
    placed = _named(ctx, "args[0]")[0]
    assert placed.mesh_shape == expect["mesh"]["shape"]
    assert placed.mesh_device_ids == [i for row in expect["mesh"]["device_ids"] for i in row]


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _cli(path: Path, name: str) -> str:
    out = run_cli("run", "sharding", str(path), "--print", name)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_cli_prints_shard_shapes_output_shard_shapes_collectives() -> None:
    path = EXAMPLES[0].parent / "transpose.py"
    expect = golden(path)
    assert json.loads(_cli(path, "shard_shapes")) == [s["shape"] for s in expect["args0"]]
    (out,) = expect["outputs"]
    assert json.loads(_cli(path, "output_shard_shapes")) == [s["shape"] for s in out]
    assert json.loads(_cli(path, "collectives")) == expect["collectives"]
    table = CASES / "C16_spec_table.py"
    want = json.loads((CASES / "C16_spec_table.expect.json").read_text())["per_device_shapes"]
    assert json.loads(_cli(table, "output_shard_shapes")) == want


def test_run_probe_fixture_runs_default_example() -> None:
    source = (EXAMPLES[0].parent / "sum_sharded_axis.py").read_text()
    ctx = run_probe("sharding", source)
    assert [type(e).__name__ for e in ctx.events if not type(e).__name__.startswith("Stage")] == [
        "ShardingPlaced",
        "JaxprStaged",
        "CollectivesFound",
        "ShardingAnnotationsChecked",
        "ShardingPlaced",
        "ShardingPlaced",
    ]
    assert jnp.asarray(0).shape == ()


def test_unknown_axis_and_too_long_spec_explained() -> None:
    example = EXAMPLES[0].parent / "sum_sharded_axis.py"
    ctx, error = _run(example, RunOptions(spec="P('z')"))
    assert error is not None
    ev = ctx.one(ShardingErrorExplained)
    assert (ev.kind, ev.mesh_axes, ev.message) == ("other", ["z"], str(error))
    ctx, error = _run(example, RunOptions(spec="P('x', None, 'y')"))
    assert error is not None
    ev = ctx.one(ShardingErrorExplained)
    assert ev.message == str(error) and "rank 2" in ev.explanation


_PLAIN = """
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
spec = P("x", "y")


def f(a):
    return a * 2


args = (jnp.ones((8, 8)),)
"""


@pytest.mark.parametrize(
    ("extra", "options", "words", "setting"),
    [
        ("mesh = 'x'", None, "`mesh` must be a jax.sharding.Mesh", "mesh"),
        ("mesh = 3", None, "`mesh` must be a jax.sharding.Mesh", "mesh"),
        ("mesh = jax.sharding.AbstractMesh((2, 4), ('x', 'y'))", None, "AbstractMesh", "mesh"),
        (
            "import numpy as np\nfrom jax.sharding import Mesh\n"
            "mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ('x', 'x'))",
            None,
            "names mesh axis 'x' more than once",
            "mesh",
        ),
        ("del mesh", None, "needs a `mesh`", None),
        ("args = ((jnp.ones(8), jnp.ones(8)),)", None, "it must be one array", "args"),
        ("args = (3, jnp.ones((8, 4)))", None, "it must be one array, got int", "args"),
        ("args = (2.5,)", None, "it must be one array, got float", "args"),
        ("static_argnums = (0,)\nargs = (3,)", None, "cannot be static", "static_argnums"),
        ("spec = 3", None, "`spec` must be a jax.sharding.PartitionSpec", "spec"),
        ("", RunOptions(spec="P('x'"), "options.spec", None),
        ("", RunOptions(spec="3"), "`options.spec` must be a jax.sharding.PartitionSpec", None),
        ("", RunOptions(mesh="jax.make_mesh((9,), ('x',))"), "options.mesh", None),
        ("", RunOptions(mesh="'abc'"), "`options.mesh` must be a jax.sharding.Mesh", None),
        ("", RunOptions(array_shape="'abc'"), "options.array_shape must be", None),
        ("", RunOptions(array_shape="(8, -2)"), "options.array_shape must be", None),
        ("", RunOptions(array_shape="(8, 2.5)"), "options.array_shape must be", None),
    ],
)
def test_bad_settings_and_options_are_invalid_snippet_at_their_line(
    extra: str, options: RunOptions | None, words: str, setting: str | None
) -> None:
    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet

    source = _PLAIN + extra + "\n"
    with pytest.raises(InvalidSnippet) as info:
        run_probe("sharding", source, options)
    failed = classify(info.value, "call", load_snippet(source).f)
    assert failed.kind == "invalid_snippet" and words in failed.message, failed.message
    lines = source.split("\n")
    want = (
        max(i + 1 for i, t in enumerate(lines) if t.startswith(setting + " =")) if setting else None
    )
    assert (failed.source.line if failed.source else None) == want
    assert "JAX raised this" not in (failed.explanation or "")


@pytest.mark.parametrize(
    ("shape", "spec", "fix"),
    [((8,), "P('x', 'y')", "at most 1 entries"), ((), "P('x')", "Use P()")],
)
def test_rank_too_long_reads_the_spec_from_jaxs_message(
    shape: tuple[int, ...], spec: str, fix: str
) -> None:
    source = _PLAIN.replace("jnp.ones((8, 8))", f"jnp.ones({shape})") + f"spec = {spec}\n"
    with pytest.raises(ValueError) as info:
        run_probe("sharding", source)
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    with pytest.raises(ValueError) as plain:
        jax.device_put(jnp.ones(shape), NamedSharding(mesh, eval(spec, {"P": P})))
    assert str(info.value) == str(plain.value)
    from exhibits.sharding.reading import explain_error

    ev = explain_error(info.value, "args[0]")
    want = eval(spec, {"P": P})
    assert ev is not None and ev.spec == str(want) and fix in ev.fix
    word = "entry" if len(want) == 1 else "entries"
    assert ev.explanation.startswith(f"{want} has {len(want)} {word}")


def test_a_scalar_on_an_explicit_mesh_reads_jaxs_bare_assertion() -> None:
    """``jax.make_mesh``'s default (Explicit) axes: JAX only asserts ``(0, P('x',))`` placing a
    rank-0 array with a non-empty spec; the exhibit keeps JAX's error and explains it as the
    rank error it is (on Auto axes JAX says so itself: test above)."""
    source = (
        _PLAIN.replace(", axis_types=(AxisType.Auto,) * 2", "").replace(
            "jnp.ones((8, 8))", "jnp.array(3.0)"
        )
        + "spec = P('x')\n"
    )
    assert "axis_types" not in source
    with pytest.raises(AssertionError) as info:
        run_probe("sharding", source)
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    with pytest.raises(AssertionError) as plain:
        jax.device_put(jnp.array(3.0), NamedSharding(mesh, P("x")))
    assert str(info.value) == str(plain.value) == "(0, P('x',))"
    from exhibits.sharding.reading import explain_error

    ev = explain_error(info.value, "args[0]")
    assert ev is not None and ev.error_class == "AssertionError" and ev.spec == str(P("x"))
    assert ev.explanation == "P('x',) has 1 entry, one per array axis, but the array has rank 0."
    assert ev.fix.startswith("Use P()")
    assert explain_error(AssertionError("(1, P('x',))"), "args[0]") is None  # not too long
    assert explain_error(AssertionError("boom"), "args[0]") is None


@pytest.mark.parametrize("arg", ["np.float32(3.0)", "jnp.ones(())"])
def test_a_scalar_placed_inside_f_on_an_explicit_mesh_is_explained_in_run_failed(
    arg: str,
) -> None:
    """Review s11c: ``f`` does ``jax.device_put(a, NamedSharding(mesh, P('x')))`` on an Explicit
    mesh with a rank-0 ``a``: JAX's bare ``AssertionError: (0, P('x',))`` (plain JAX below) is
    kept, at the device_put line, and run_failed explains it as the rank error (the fix P())."""
    from jaxscope.sandbox.errors import classify
    from jaxscope.sandbox.snippet import load_snippet

    source = (
        "import jax\nimport jax.numpy as jnp\nimport numpy as np\n"
        "from jax.sharding import NamedSharding, PartitionSpec as P\n\n"
        'mesh = jax.make_mesh((2, 4), ("x", "y"))\nspec = P()\n\n\n'
        'def f(a):\n    return jax.device_put(a, NamedSharding(mesh, P("x")))\n\n\n'
        f"args = ({arg},)\n"
    )
    mesh = jax.make_mesh((2, 4), ("x", "y"))
    value = eval(arg, {"np": np, "jnp": jnp})
    with pytest.raises(AssertionError) as plain:
        jax.jit(lambda a: jax.device_put(a, NamedSharding(mesh, P("x"))))(value)
    with pytest.raises(AssertionError) as info:
        run_probe("sharding", source)
    assert str(info.value) == str(plain.value) == "(0, P('x',))"
    failed = classify(info.value, "trace", load_snippet(source).f)
    assert failed.error_class == "AssertionError" and failed.message == "(0, P('x',))"
    assert failed.source is not None
    assert "jax.device_put(a" in source.split("\n")[failed.source.line - 1]
    assert failed.explanation is not None
    assert failed.explanation.startswith(
        "P('x',) has 1 entry, one per array axis, but the array has rank 0. Use P()"
    )
