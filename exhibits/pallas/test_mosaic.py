"""pallas with ``target`` "tpu-v5e": each kernel lowered for a TPU v5e through Mosaic, offline, in
a "tpu_compile" worker (design 0073). Skipped where libtpu is not installed (``make tpu``).

The truth: the same snippet lowered by plain JAX and libtpu in a fresh process (no jaxscope) with
``pl.pallas_call(..., debug=True)``, which prints the kernel's Mosaic module as Pallas made it
(canonicalized: its constants folded, so the ops other than ``arith.constant`` are compared), and
the kernel's BlockSpecs as the exhibit read them from the jaxpr (``pallas_call_found``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from jaxscope.protocol import RunOptions
from jaxscope.sandbox import kinds

from exhibits.registry import EXHIBITS, EXHIBITS_DIR
from testkit import run_cli

from .mosaic import tiled_block

TILED = EXHIBITS_DIR.parent / "recordings" / "tpu-v5e" / "pallas_chip" / "matmul_tiled.py"
DEFAULT = EXHIBITS["pallas"].example_paths()["matmul"]
needs_libtpu = pytest.mark.skipif(
    kinds.kind_problem("tpu_compile") is not None, reason="libtpu not installed (make tpu)"
)

PLAIN = """
import functools, sys
import jax
from jax.experimental import pallas as pl
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding
pl.pallas_call = functools.partial(pl.pallas_call, debug=True)
ns = {}
exec(compile(open(sys.argv[1]).read(), "<snippet>", "exec"), ns)
dev = topologies.get_topology_desc(topology_name="v5e:2x2", platform="tpu").devices[0]
s = SingleDeviceSharding(dev)
avals = [jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s) for a in ns["args"]]
jax.jit(ns["f"]).trace(*avals).lower(lowering_platforms=("tpu",))
"""


def _events(argv: list[str]) -> list[dict[str, Any]]:
    result = run_cli("run", "pallas", *argv, "--target", "tpu-v5e", "--json")
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _ops(module: str) -> list[str]:
    """The kernel function's op names, but ``arith.constant`` (folded by canonicalization)."""
    body = module.split("func.func @transform_0")[0]
    names = re.findall(r"^\s+(?:%\S+ = )?([a-z_]+\.[a-z_]+|return)\b", body, re.M)
    return [n for n in names if n != "arith.constant"]


def test_routing_by_option() -> None:
    assert kinds.worker_kind("pallas") == "jax"
    assert kinds.worker_kind("pallas", RunOptions(target="tpu-v5e")) == "tpu_compile"
    assert kinds.serves("tpu_compile", "pallas")


def test_the_block_that_would_tile() -> None:
    assert tiled_block([4, 8], [8, 8]) == [8, 8]
    assert tiled_block([8, 128], [16, 256]) is None
    assert tiled_block([4, 100], [64, 1000]) == [8, 128]
    assert tiled_block([3, 4, 200], [5, 16, 200]) == [3, 8, 200]


@needs_libtpu
def test_the_kernel_lowered_through_mosaic() -> None:
    """The Mosaic module of the tileable matmul: its grid, windows and memory spaces are the
    BlockSpecs' (VMEM blocks), its ops are Pallas's own lowering's, and ``tpu.matmul`` is linked
    to the kernel jaxpr's ``dot_general`` at the kernel's line; libtpu compiled it."""
    events = _events([str(TILED)])
    (found,) = [e for e in events if e["type"] == "pallas_call_found"]
    (low,) = [e for e in events if e["type"] == "pallas_mosaic_lowered"]
    assert low["error"] is None and low["compile_s"] > 0 and low["kernel"] == "matmul_kernel"
    assert low["grid"] == found["grid"] == [2, 3]
    assert [w["block"] for w in low["windows"]] == [
        [d["size"] for d in op["block"]] for op in found["operands"]
    ]
    assert {w["memory_space"] for w in low["windows"]} == {"vmem"}
    kernel_line = next(
        i + 1 for i, t in enumerate(TILED.read_text().splitlines()) if "x_ref[...] @" in t
    )
    (matmul,) = [o for o in low["ops"] if o["name"] == "tpu.matmul"]
    assert matmul == {"name": "tpu.matmul", "primitive": "dot_general", "line": kernel_line}
    kernel_prims = {e["primitive"] for e in found["kernel_jaxpr"]["eqns"]}
    assert {o["primitive"] for o in low["ops"]} - {None} <= kernel_prims
    # the kernel (interpret=False) then runs in interpret mode on this CPU, against reference
    (out,) = next(e for e in events if e["type"] == "pallas_output_compared")["outputs"]
    assert out["allclose"] is True and out["path"] == "out"
    assert events[-1]["type"] == "run_finished"

    env = {**os.environ, **kinds.tpu_compile_env()}
    env.pop("PYTHONPATH", None)
    plain = subprocess.run(
        [sys.executable, "-c", PLAIN, str(TILED)], env=env, capture_output=True, text=True
    )
    assert plain.returncode == 0, plain.stderr[-2000:]
    printed = plain.stdout.split("The Mosaic module for pallas_call")[1]
    printed = printed.split("\n", 1)[1]
    # canonicalization also drops the load of the old output block that ``swap`` makes
    # (``o_ref[...] = v`` returns the old value, unused here): the rest is op for op the same
    ours, theirs = _ops(low["mosaic"]), _ops(printed)
    kernel_ops = ["vector.load", "vector.load", "tpu.matmul", "tpu.vector_store", "return"]
    assert theirs == ["func.func", *kernel_ops]
    assert [o for o in ours if o != "vector.load"] == [o for o in theirs if o != "vector.load"]
    assert ours.count("vector.load") == theirs.count("vector.load") + 1
    signature = re.compile(r"func\.func @matmul_kernel\(([^)]*)\)")
    assert signature.findall(low["mosaic"]) == signature.findall(printed)


@needs_libtpu
def test_a_block_the_tpu_cannot_tile() -> None:
    """The default example's 4x8 block of x: JAX's Pallas TPU lowering refuses it; the event
    has JAX's words, blames the BlockSpec's line and gives the block that tiles; a finding."""
    result = run_cli("run", "pallas", str(DEFAULT), "--target", "tpu-v5e", "--json")
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    (low,) = [e for e in events if e["type"] == "pallas_mosaic_lowered"]
    assert low["error_stage"] == "lower"
    assert "divisible by 8 and 128" in low["error"] and "Block spec for args[0]" in low["error"]
    lines = DEFAULT.read_text().splitlines()
    assert "pl.BlockSpec((4, 8)" in lines[low["error_line"] - 1]
    assert "(8, 8) instead of (4, 8)" in low["fix"]
    assert events[-1]["type"] == "run_finished"  # interpret mode still runs on the CPU
    printed = run_cli("run", "pallas", str(DEFAULT), "--target", "tpu-v5e", "--print", "mosaic")
    assert printed.returncode == 3 and printed.stdout.startswith("error (lower): The Pallas TPU")
