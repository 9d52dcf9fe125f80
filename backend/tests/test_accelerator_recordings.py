"""Recorded accelerator runs replayed in CI (issue 34, part 5; CI has no accelerator).

``recordings/tpu-v5e/`` holds what ``scripts/on-accelerator.sh`` recorded on the lent TPU v5e
host (one chip, jax 0.10.2, gVisor, so ``--unsafe-no-sandbox``): every JAX exhibit's default
example through ``jaxscope run --json``. Each stream must still be a valid stream of today's
protocol (one terminal event, seqs in order, every event validated by the event union), the run
must have been on the TPU, and the numbers it shows must agree with the same program computed
here on the CPU (the independent truth; the TPU's default matmul precision is bf16 passes, so the
tolerance is a relative 1e-2). The summary the script wrote must agree with the streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.protocol import EVENT_ADAPTER, EventBase
from jaxscope.sandbox.snippet import load_snippet

from exhibits.registry import EXHIBITS
from tests.harness import REPO, assert_one_terminal

RECORDED = REPO / "recordings" / "tpu-v5e"
STREAMS = sorted(RECORDED.glob("*.events.jsonl"))
# Exhibits whose default example needs 8 devices: on one chip its mesh cannot be made, and the
# run went to the 8 virtual CPU devices beside the chip, saying so (design 0069).
NEEDS_EIGHT_DEVICES = {"sharding", "shard_map"}
FALLBACK_NOTE = (
    "this program needs more devices than the TPU has (1 on this host): it ran on the 8 "
    "virtual CPU devices beside it"
)


def _events(path: Path) -> list[EventBase]:
    lines = path.read_text().splitlines()
    return [EVENT_ADAPTER.validate_json(line) for line in lines if line.strip()]


def _raw(path: Path) -> list[dict[str, Any]]:
    """The stream's events as recorded (JSON objects)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_every_jax_exhibit_was_recorded() -> None:
    recorded = {p.name.removesuffix(".events.jsonl") for p in STREAMS}
    jax_exhibits = {i for i, e in EXHIBITS.items() if e.worker == "jax"}
    # flax_params and rules import Flax, which the lent host's image lacks.
    assert jax_exhibits - recorded == {"flax_params", "rules"}
    assert recorded <= jax_exhibits


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name.split(".")[0])
def test_a_recorded_stream_is_a_valid_run_on_the_tpu(path: Path) -> None:
    exhibit = path.name.removesuffix(".events.jsonl")
    assert_one_terminal(_events(path))
    raw = _raw(path)
    started, terminal = raw[0], raw[-1]
    assert started["type"] == "run_started"
    assert terminal["type"] == "run_finished", terminal.get("message")
    if exhibit in NEEDS_EIGHT_DEVICES:
        assert started["backend"] == "cpu"
        assert started["devices"] == [f"cpu:{i}" for i in range(8)]
        assert started["device_note"] == FALLBACK_NOTE
    else:
        assert started["backend"] == "tpu"
        assert [d.startswith("TPU_") for d in started["devices"]] == [True]
        assert "device_note" not in started


def test_the_summary_agrees_with_the_streams() -> None:
    summary = json.loads((RECORDED / "summary.json").read_text())
    for row in summary:
        events = _events(RECORDED / f"{row['exhibit']}.events.jsonl")
        assert row["events"] == len(events)
        assert row["terminal"] == events[-1].type
        assert row["backend"] == ("cpu" if row["exhibit"] in NEEDS_EIGHT_DEVICES else "tpu")


def test_the_tpu_result_of_stations_is_the_cpu_result() -> None:
    """stations runs the compiled program on the device: its output on the TPU against the same
    snippet jitted here on the CPU."""
    raw = _raw(RECORDED / "stations.events.jsonl")
    executed = next(e for e in raw if e["type"] == "program_executed")
    assert executed["platform"] == "tpu"
    (output,) = executed["outputs"]
    stations = EXHIBITS["stations"]
    snippet = load_snippet(stations.picker_paths()[stations.default_example].read_text())
    with jax.default_device(jax.devices("cpu")[0]):
        expected = float(jax.jit(snippet.f)(*snippet.args))
    np.testing.assert_allclose(float(output["preview"]), expected, rtol=1e-2)


def test_the_tpu_compile_shows_tpu_layouts() -> None:
    """The Compiled station's optimized HLO is the TPU compiler's: its layouts carry TPU tiles
    (``T(8,128)``), which no CPU compile prints."""
    raw = _raw(RECORDED / "stations.events.jsonl")
    compiled = next(e for e in raw if e["type"] == "executable_compiled")
    assert "T(8,128)" in compiled["compiled_text"]


def test_the_tpu_pmap_gives_each_device_numpys_values() -> None:
    """pmap's default example sizes its rows by ``jax.local_device_count()``: one row on the one
    chip. Each device's received shape and returned values on the TPU against numpy on the same
    rows."""
    raw = _raw(RECORDED / "pmap.events.jsonl")
    run = next(e for e in raw if e["type"] == "pmap_devices_run")
    n = len(run["devices"])
    assert n == 1 and run["devices"][0]["device"].startswith("TPU_0")
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)  # the example's args[0]
    for d in run["devices"]:
        i = d["index"]
        assert [leaf["shape"] for leaf in d["inputs"]] == [[3]]
        total, mean, sums, centred = d["values"]
        np.testing.assert_allclose(total, x.sum(0), rtol=1e-6)
        np.testing.assert_allclose(mean, x.mean(0), rtol=1e-6)
        np.testing.assert_allclose(sums, x.sum(1), rtol=1e-6)
        np.testing.assert_allclose(centred, x[i] - x.mean(0), atol=1e-6)


def test_the_mesh_fallback_placed_on_all_eight_cpu_devices() -> None:
    """sharding's (2, 4) mesh, made on the CPU devices beside the chip: every placement spans
    the 8 devices in the mesh's shape."""
    raw = _raw(RECORDED / "sharding.events.jsonl")
    placed = [e for e in raw if e["type"] == "sharding_placed"]
    assert placed
    for event in placed:
        assert event["mesh_shape"] == [2, 4]
        assert sorted(event["mesh_device_ids"]) == list(range(8))
