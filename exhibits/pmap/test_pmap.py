"""Tests of the pmap exhibit's probe: every artefact against an independent truth.

Truths: ``jax.make_jaxpr(jax.pmap(f))`` in a fresh Python (the ``jaxpr`` artefact), numpy on the
snippet's own arrays (each device's inputs and outputs, each collective's values before and
after, the data-parallel gradient of the mean squared error written out by hand), and JAX's own
errors raised by the plain snippet (the failing examples, each at its line with its fix).
One probe run per example, shared by the module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jaxscope.events import EVENT_ADAPTER
from jaxscope.protocol import EventBase, JaxprStaged, RunFinished
from jaxscope.sandbox.errors import describe_failure

from exhibits.conftest import FakeContext, run_probe
from exhibits.registry import EXHIBITS
from exhibits.sharding.events import ShardingPlaced

from .events import (
    EVENTS,
    PmapCollectivesMoved,
    PmapDevicesRun,
    PmapEquivalentsCompared,
    PmapTraced,
)

HERE = Path(__file__).resolve().parent
EXHIBIT = HERE.name
EXAMPLES = HERE / "examples"
N = 8  # the workers' (and these tests') virtual CPU devices: exhibits/pmap/conftest.py


def namespace(name: str) -> dict[str, Any]:
    """The example run as plain Python (not through the probe)."""
    path = EXAMPLES / f"{name}.py"
    ns: dict[str, Any] = {"__name__": "example"}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns


@pytest.fixture(scope="module")
def runs() -> dict[str, FakeContext]:
    return {
        name: run_probe(EXHIBIT, (EXAMPLES / f"{name}.py").read_text())
        for name in ("collectives", "dp_step")
    }


def artefact(name: str, ctx: FakeContext) -> str:
    text = EXHIBITS[EXHIBIT].artefacts[name](ctx.events)
    assert text is not None
    return text


def one(ctx: FakeContext, kind: type[Any]) -> Any:
    (found,) = [e for e in ctx.events if isinstance(e, kind)]
    return found


# The plain script: jax.make_jaxpr(jax.pmap(f, axis_name, in_axes)) of each example, in a fresh
# Python with 8 CPU devices, as a user writes it.
_PLAIN = """
import json, runpy, sys
import jax
out = {}
for path in sys.argv[1:]:
    ns = runpy.run_path(path)
    pf = jax.pmap(ns["f"], axis_name=ns.get("axis_name"), in_axes=ns.get("in_axes", 0))
    out[path] = str(jax.make_jaxpr(pf)(*ns["args"]))
print(json.dumps(out))
"""


def test_print_jaxpr_is_make_jaxpr_of_pmap_in_a_fresh_process(runs: dict[str, FakeContext]) -> None:
    paths = [str(EXAMPLES / f"{name}.py") for name in runs]
    env = {"XLA_FLAGS": f"--xla_force_host_platform_device_count={N}", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN, *paths], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr
    plain = json.loads(proc.stdout)
    for name, ctx in runs.items():
        text = artefact("jaxpr", ctx)
        assert text == plain[str(EXAMPLES / f"{name}.py")]
        # pmap is a jit around a shard_map over the axis pmap was given
        assert "jit[" in text and "shard_map[" in text and "check_vma=False" in text


def test_pmap_is_a_jit_around_a_shard_map(runs: dict[str, FakeContext]) -> None:
    traced = one(runs["collectives"], PmapTraced)
    assert traced.axis_name == "i" and traced.axis_name_given
    assert traced.mesh_size == N and traced.device_ids == list(range(N))
    assert traced.in_specs == ["P('i',)"] and traced.out_specs == ["P('i',)"] * 4
    assert not traced.check_vma
    # one squeeze per mapped input, one broadcast_in_dim per output (the axis put back)
    assert (traced.squeezes, traced.expands) == (1, 4)
    assert [(c.primitive, c.axes) for c in traced.collectives] == [
        ("psum", ["i"]),
        ("psum", ["i"]),
        ("all_gather", ["i"]),
    ]
    lines = (EXAMPLES / "collectives.py").read_text().splitlines()
    for c in traced.collectives:
        assert c.source is not None and c.source_text == lines[c.source.line - 1].strip()
    dp = one(runs["dp_step"], PmapTraced)
    # in_axes=(None, 0): params broadcast (P()), the batch split
    assert dp.in_axes == [None, None, 0, 0]
    assert dp.in_specs == ["P()", "P()", "P('batch',)", "P('batch',)"]


def test_without_axis_name_pmap_names_its_axis_and_uses_the_first_devices() -> None:
    source = (
        "import numpy as np\ndef f(x):\n    return x * 2\nargs = (np.ones((4, 3), np.float32),)\n"
    )
    ctx = run_probe(EXHIBIT, source)
    traced = one(ctx, PmapTraced)
    assert traced.axis_name == "_internal_pmap_axis_name" and not traced.axis_name_given
    # 4 rows: a mesh of the first 4 of the 8 devices
    assert traced.mesh_size == 4 and traced.device_ids == [0, 1, 2, 3]
    assert [d.device_id for d in one(ctx, PmapDevicesRun).devices] == [0, 1, 2, 3]


def test_each_device_gets_its_row_and_returns_numpys_values(runs: dict[str, FakeContext]) -> None:
    x = namespace("collectives")["args"][0]
    text = artefact("per_device", runs["collectives"])
    per_device = json.loads(text)
    assert [d["device"] for d in per_device] == list(range(N))
    for d in per_device:
        i = d["index"]
        assert d["inputs"] == {"args[0]": [3]}
        out = d["outputs"]
        np.testing.assert_allclose(out["out[0]"], x.sum(0), rtol=1e-6)
        np.testing.assert_allclose(out["out[1]"], x.mean(0), rtol=1e-6)
        np.testing.assert_allclose(out["out[2]"], x.sum(1), rtol=1e-6)
        np.testing.assert_allclose(out["out[3]"], x[i] - x.mean(0), rtol=1e-6, atol=1e-6)
    # args[0] as pmap placed it: device d holds row d
    (arg,) = [
        e
        for e in runs["collectives"].events
        if isinstance(e, ShardingPlaced) and e.name == "args[0]"
    ]
    assert [(s.device_id, s.index) for s in arg.shards] == [
        (d, [[d, d + 1], [0, 3]]) for d in range(N)
    ]


def test_collectives_move_numpys_values(runs: dict[str, FakeContext]) -> None:
    x = namespace("collectives")["args"][0]
    moved = one(runs["collectives"], PmapCollectivesMoved).moved
    psum, pmean_psum, gather = moved
    for m in (psum, pmean_psum):  # pmean is a psum, then a div by the axis size
        np.testing.assert_allclose(m.before, x, rtol=1e-6)
        np.testing.assert_allclose(m.after, np.broadcast_to(x.sum(0), x.shape), rtol=1e-6)
    np.testing.assert_allclose(gather.before, x.sum(1), rtol=1e-6)
    np.testing.assert_allclose(gather.after, np.broadcast_to(x.sum(1), (N, N)), rtol=1e-6)
    assert (gather.operand_shape, gather.result_shape) == ([], [N])


def test_data_parallel_step_three_ways_equal_numpys_gradient(runs: dict[str, FakeContext]) -> None:
    ns = namespace("dp_step")
    params, (x, y) = ns["args"]
    xs, ys = x.reshape(-1, 3).astype(np.float64), y.reshape(-1, 2).astype(np.float64)
    # d/dp mean((x w + b - y)^2) over every element of the whole batch, by hand
    r = xs @ params["w"] + params["b"] - ys
    want = {"b": 2 * r.sum(0) / r.size, "w": 2 * xs.T @ r / r.size}
    per_device = json.loads(artefact("per_device", runs["dp_step"]))
    for d in per_device:
        assert d["inputs"] == {
            "args[0]['b']": [2],
            "args[0]['w']": [3, 2],
            "args[1][0]": [4, 3],
            "args[1][1]": [4, 2],
        }
        np.testing.assert_allclose(d["outputs"]["out['b']"], want["b"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(d["outputs"]["out['w']"], want["w"], rtol=1e-4, atol=1e-5)
    compared = one(runs["dp_step"], PmapEquivalentsCompared)
    assert [(v.name, v.compared, v.equal) for v in compared.versions] == [
        ("pmap(f)", "self", None),
        ("jit_version", "per_device", True),
        ("shard_map_version", "per_device", True),
    ]
    jit_text, smap_text = (v.jaxpr.text for v in compared.versions[1:])
    # jit + NamedSharding: no collective in the jaxpr (the partitioner inserts it); shard_map's
    # body names the axis as pmap's does
    assert "shard_map[" not in jit_text and "psum" not in jit_text
    assert "shard_map[" in smap_text and "psum[axes=('batch',)" in smap_text
    assert json.loads(artefact("equivalents", runs["dp_step"]))[1]["equal"]


# The failing examples: JAX's error (class, the line the traceback or the probe blames) and the
# exhibit's fix.
FAILING = {
    "too_many_rows": ("IndivisibleError", "args = ", "reshape"),
    "unbound_axis": ("NameError", 'jax.lax.psum(x, "batch")', "axis_name='batch'"),
    "nested_pmap": ("ValueError", 'jax.pmap(inner, axis_name="j")(x)', "jax.make_mesh((a, b)"),
}


@pytest.mark.parametrize("name", sorted(FAILING))
def test_errors_users_hit_at_their_line_with_the_fix(name: str) -> None:
    error_class, line_text, fix = FAILING[name]
    ns = namespace(name)
    import jax

    # the plain snippet raises the same error, unexplained
    with pytest.raises(Exception) as plain:
        jax.pmap(ns["f"], axis_name=ns.get("axis_name"))(*ns["args"])
    assert type(plain.value).__name__ == error_class
    with pytest.raises(Exception) as raised:
        run_probe(EXHIBIT, (EXAMPLES / f"{name}.py").read_text())
    assert type(raised.value).__name__ == error_class
    failed = describe_failure(raised.value, "trace")
    lines = (EXAMPLES / f"{name}.py").read_text().splitlines()
    assert failed.source is not None and line_text in lines[failed.source.line - 1]
    assert failed.explanation and failed.fix and fix in failed.fix


def golden_streams() -> list[Path]:
    return sorted((HERE / "golden").glob("*.events.jsonl"))


@pytest.mark.parametrize("golden", golden_streams(), ids=lambda p: p.name)
def test_golden_stream_is_the_probes(golden: Path, runs: dict[str, FakeContext]) -> None:
    """The golden (``jaxscope run pmap examples/NAME.py --json``, the real sandbox) parses with
    the event union and holds what the probe emits now."""
    lines = [line for line in golden.read_text().splitlines() if line.strip()]
    stream = [EVENT_ADAPTER.validate_json(line) for line in lines]
    assert isinstance(stream[-1], RunFinished)
    ctx = runs[golden.name.removesuffix(".events.jsonl")]
    kinds: tuple[type[EventBase], ...] = (*EVENTS, ShardingPlaced, JaxprStaged)

    def own(events: list[EventBase]) -> list[dict[str, Any]]:
        return [e.model_dump(exclude={"seq", "run_id"}) for e in events if isinstance(e, kinds)]

    assert own(stream) == own(ctx.events)
    assert any(isinstance(e, PmapDevicesRun) for e in stream)


WIDE_ROWS = """\
import jax
import jax.numpy as jnp

def f(x):
    return jnp.cos(x) * 2.0

args = (jnp.arange(8 * 300, dtype=jnp.float32).reshape(8, 300) / 100.0,)
"""


def test_cli_per_device_prints_every_value_past_the_pages_limit(tmp_path: Path) -> None:
    """``--print per_device`` is whole for a script (issue 33, class 8): each device's 300
    values (past the page's 256) are numbers, equal to numpy's cos(row) * 2 (float64, to
    float32's rounding of arguments up to 24: 1e-5)."""
    from testkit import run_cli

    path = tmp_path / "wide.py"
    path.write_text(WIDE_ROWS)
    out = run_cli("run", "pmap", str(path), "--print", "per_device")
    assert out.returncode == 0, out.stderr
    per_device = json.loads(out.stdout)
    x = np.arange(8 * 300, dtype=np.float32).reshape(8, 300) / np.float32(100.0)
    assert [d["device"] for d in per_device] == list(range(N))
    for d in per_device:
        (values,) = d["outputs"].values()
        assert values is not None and len(values) == 300
        want = np.cos(x[d["index"]].astype(np.float64)) * 2.0
        np.testing.assert_allclose(values, want, rtol=0, atol=1e-5)


# Inputs a break-it review found blamed on f's def line: each snippet as a user writes it, the
# line the run must point at, the error JAX raises, and words of the exhibit's explanation/fix.
MISBLAMED = {
    "scalar_arg": (
        "import jax\n\ndef f(x):\n    return x * 2\n\nargs = (1.0,)\n",
        "args = (1.0,)",
        "pmap requires at least one argument with a mapped axis",
        ("args[0] has no such axis", "leading axis of jax.local_device_count() (8)"),
    ),
    "numpy_scalar_beside_rows": (
        "import numpy as np\n\ndef f(x, scale):\n    return x * scale\n\n"
        "args = (np.ones((8, 3), np.float32), np.float32(2.0))\n",
        "args = (np.ones((8, 3)",
        "is incompatible with its sharding annotation",
        ("args[1] has no such axis", "in_axes=None"),
    ),
    "int_axis_name": (
        "import jax\nimport numpy as np\n\naxis_name = 0\n\ndef f(x):\n"
        '    return x / jax.lax.psum(x, "i")\n\nargs = (np.arange(8, dtype=np.float32),)\n',
        "axis_name = 0",
        "cannot select an axis to squeeze out",
        ("axis_name is the int 0", 'axis_name = "i"'),
    ),
    "int_axis_in_psum": (
        'import jax\nimport numpy as np\n\naxis_name = "i"\n\ndef f(x):\n'
        "    return x / jax.lax.psum(x, 0)\n\nargs = (np.arange(8, dtype=np.float32),)\n",
        "return x / jax.lax.psum(x, 0)",
        "reduction axes (0,) contains out-of-bounds indices",
        ("positional axis of its operand", "jax.lax.psum(x, 'i')"),
    ),
}


@pytest.mark.parametrize("name", sorted(MISBLAMED))
def test_misblamed_inputs_point_at_their_line(name: str) -> None:
    source, line_text, message, (explained, fix) = MISBLAMED[name]
    with pytest.raises(Exception) as raised:
        run_probe(EXHIBIT, source)
    failed = describe_failure(raised.value, "trace")
    assert failed.source is not None
    assert line_text in source.splitlines()[failed.source.line - 1]
    assert message in failed.message
    assert failed.explanation and explained in failed.explanation
    assert failed.fix and fix in failed.fix
