"""stations with ``target`` "tpu-v5e": the TPU compiler's own output on a machine without a TPU
(design 0067), from a "tpu_compile" worker, and libtpu never in a JAX worker.

One run of ``jaxscope run stations mlp_loss --target tpu-v5e --json`` per module (a real
sandboxed worker of that kind). Its truth: the same program compiled by plain JAX with libtpu
in a fresh process (no jaxscope), and the CPU compile, which has none of the TPU's layouts.
Skipped where libtpu is not installed (``make tpu``; ``TPU=no``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import jax
import pytest
from jaxscope import cli
from jaxscope.protocol import RunOptions
from jaxscope.sandbox import kinds
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.sandbox.worker import worker_env

from exhibits.registry import EXHIBITS
from testkit import run_cli

EXAMPLE = EXHIBITS["stations"].example_paths()["mlp_loss"]
needs_libtpu = pytest.mark.skipif(
    kinds.kind_problem("tpu_compile") is not None, reason="libtpu not installed (make tpu)"
)

# The example compiled by plain JAX and libtpu in a fresh process: what the worker must match.
PLAIN = """
import json, runpy, sys
import jax
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding
ns = runpy.run_path(sys.argv[1])
dev = topologies.get_topology_desc(topology_name="v5e:2x2", platform="tpu").devices[0]
s = SingleDeviceSharding(dev)
avals = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), ns["args"])
c = jax.jit(ns["f"]).trace(*avals).lower(lowering_platforms=("tpu",)).compile()
m = c.memory_analysis()
names = [n for n in dir(m) if n.endswith("_in_bytes")]
print(json.dumps({"memory": {n: getattr(m, n) for n in names}, "flops": c.cost_analysis()["flops"],
                  "kind": dev.device_kind, "backend": jax.default_backend()}))
"""


def _events(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def tpu_run() -> list[dict[str, Any]]:
    result = run_cli("run", "stations", str(EXAMPLE), "--target", "tpu-v5e", "--json")
    assert result.returncode == 0, result.stderr
    return _events(result)


@pytest.fixture(scope="module")
def plain() -> dict[str, Any]:
    env = {**os.environ, **kinds.tpu_compile_env()}
    env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [sys.executable, "-c", PLAIN, str(EXAMPLE)], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def _compiled(events: list[dict[str, Any]]) -> dict[str, Any]:
    (compiled,) = [e for e in events if e["type"] == "executable_compiled"]
    return compiled


def test_routing_by_option() -> None:
    assert kinds.worker_kind("stations") == "jax"
    assert kinds.worker_kind("stations", RunOptions(target="host")) == "jax"
    assert kinds.worker_kind("stations", RunOptions(target="tpu-v5e")) == "tpu_compile"
    assert kinds.worker_kind("tracing", RunOptions(target="tpu-v5e")) == "jax"
    assert kinds.serves("tpu_compile", "stations") and not kinds.serves("tpu_compile", "tracing")


def test_jax_workers_never_see_libtpu() -> None:
    """A JAX worker's environment names no libtpu and keeps no offline topology; its python
    finds no libtpu to import (the folder is on no path of the JAX venv)."""
    host = {"PATH": "/usr/bin", "TPU_LIBRARY_PATH": "/x/libtpu.so", "TPU_WORKER_ID": "3"}
    jax_env = worker_env(host, kind="jax")
    tpu_env = worker_env(host, kind="tpu_compile")
    assert str(kinds.tpu_site()) not in " ".join(jax_env.values())
    assert tpu_env["TPU_LIBRARY_PATH"] == str(kinds.tpu_library())
    assert tpu_env["JAX_PLATFORMS"] == "cpu" and tpu_env["TPU_WORKER_ID"] == "0"
    assert kinds.runner_command("jax") == kinds.runner_command("tpu_compile")
    found = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('libtpu'))"],
        env=worker_env(kind="jax"),
        capture_output=True,
        text=True,
    )
    assert found.stdout.strip() == "None", found


@needs_libtpu
def test_tpu_only_layouts_and_memory_spaces(tpu_run: list[dict[str, Any]]) -> None:
    """The compiled module is the TPU compiler's: tiled layouts (``T(8,128)``) and memory
    spaces (``S(1)``), which the CPU compile of the same program has none of; no run."""
    started = next(e for e in tpu_run if e["type"] == "run_started")
    assert started["backend"] == "cpu"  # the worker's default backend stays the CPU
    text = _compiled(tpu_run)["compiled_text"]
    assert "T(8,128)" in text and "S(1)" in text
    cpu = run_cli("run", "stations", str(EXAMPLE), "--print", "compiled")
    assert cpu.returncode == 0 and "T(8,128)" not in cpu.stdout and "S(1)" not in cpu.stdout
    assert not [e for e in tpu_run if e["type"] == "program_executed"]
    assert tpu_run[-1]["type"] == "run_finished"
    assert "TPU v5 lite" in _compiled(tpu_run)["caveats"][0]
    # What the page's header and Run station say instead of the worker's CPU and "waiting".
    assert (_compiled(tpu_run)["compiled_for"], _compiled(tpu_run)["topology"]) == (
        "TPU v5e",
        "v5e:2x2",
    )


def test_cli_refuses_output_of_a_compile_only_target(capsys: pytest.CaptureFixture[str]) -> None:
    """``--print output`` with ``--target tpu-v5e`` is refused before any run (usage, 2) with
    the reason; ``--help`` lists the target's choices. No worker starts (in-process)."""
    status = cli.main(["run", "stations", str(EXAMPLE), "--target", "tpu-v5e", "--print", "output"])
    err = capsys.readouterr().err
    assert status == cli.EXIT_USAGE
    assert "TPU v5e target compiles only: nothing is run" in err and "'output'" in err
    assert "compiled, cost, memory" in err
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    assert "--target {host,tpu-v5e}" in capsys.readouterr().out


@needs_libtpu
def test_memory_and_cost_equal_plain_offline_compile(
    tpu_run: list[dict[str, Any]], plain: dict[str, Any]
) -> None:
    compiled = _compiled(tpu_run)
    assert plain["backend"] == "cpu" and plain["kind"] == "TPU v5 lite"
    for name, value in plain["memory"].items():
        assert compiled["memory"][name] == value, name
    assert compiled["cost"]["flops"] == plain["flops"]


@needs_libtpu
def test_hlo_linked_to_user_lines(tpu_run: list[dict[str, Any]]) -> None:
    """The TPU HLO's instructions link back to the snippet's lines (18-21: f's body) as the
    CPU's do."""
    links = _compiled(tpu_run)["hlo_links"]
    lines = {link["source"]["line"] for link in links if link.get("source")}
    assert {18, 19, 20, 21} <= lines


@needs_libtpu
def test_memory_peak_offline(tpu_run: list[dict[str, Any]]) -> None:
    """The TPU compile's memory peak (design 0073): every argument of ``f`` is live there in
    HBM (the default memory space) at its logical size, and the buffers in VMEM are the ones
    whose layout says ``S(1)``; each linked buffer's line defines its instruction."""
    peak = _compiled(tpu_run)["memory_peak"]
    snippet = load_snippet(EXAMPLE.read_text())
    sizes = sorted(int(leaf.nbytes) for leaf in jax.tree.leaves(snippet.args))
    params = [
        b
        for b in peak["buffers"]
        if b["instruction"].split(".")[0] in ("x", "labels")
        or b["instruction"].startswith("params")
    ]
    assert sorted(b["bytes"] for b in params) == sizes
    assert all(b["space"] == "default" for b in params)
    text = _compiled(tpu_run)["compiled_text"].splitlines()
    for b in peak["buffers"]:
        if not b["shape"].startswith("("):
            assert (b["space"] == "vmem") == ("S(1)" in b["shape"])
        if b["line"] is not None:
            assert f"%{b['instruction']} = " in text[b["line"]]
    assert sum(b["bytes"] for b in peak["buffers"]) == sum(peak["peak_by_space"].values())
