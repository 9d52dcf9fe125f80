"""Pallas kernels compiled through Mosaic and run on the TPU v5e, replayed in CI (issue 34 part 3,
design 0073; CI has no accelerator).

``recordings/tpu-v5e/pallas_chip/`` holds what ``bench/pallas_chip.py`` recorded on the lent chip
(jax 0.10.2, ``--unsafe-no-sandbox`` under gVisor): ``pallas_chip.json``, a plain script's
figures (no jaxscope: the snippet's ``f`` compiled through Mosaic, the same ``f`` in interpret
mode, the snippet's ``reference``, all on the chip, and numpy in float64 on the host), and
``jaxscope run pallas SNIPPET --json`` of each snippet (``*.events.jsonl``, the kernel compiled on
the chip by the exhibit's own worker). The truth here: the snippets' arguments recomputed on this
CPU (numpy), and the two recordings against each other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.protocol import EVENT_ADAPTER
from jaxscope.sandbox.snippet import load_snippet

from tests.harness import REPO, assert_one_terminal

RECORDED = REPO / "recordings" / "tpu-v5e" / "pallas_chip"
STREAMS = sorted(RECORDED.glob("*.events.jsonl"))
FIGURES: dict[str, Any] = json.loads((RECORDED / "pallas_chip.json").read_text())


def _raw(name: str) -> list[dict[str, Any]]:
    path = RECORDED / f"{name}.events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _one(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (event,) = [e for e in events if e["type"] == kind]
    return event


def _args(name: str) -> tuple[Any, ...]:
    snippet = load_snippet((RECORDED / f"{name}.py").read_text())
    return tuple(np.asarray(a) for a in snippet.namespace["args"])


def test_every_snippet_was_recorded() -> None:
    names = {p.stem for p in RECORDED.glob("*.py")}
    assert {p.name.removesuffix(".events.jsonl") for p in STREAMS} == names == set(FIGURES)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name.split(".")[0])
def test_a_stream_is_a_compiled_kernel_on_the_tpu(path: Path) -> None:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert_one_terminal([EVENT_ADAPTER.validate_json(line) for line in lines])
    events = _raw(path.name.removesuffix(".events.jsonl"))
    assert events[0]["backend"] == "tpu" and events[0]["devices"][0].startswith("TPU_0")
    assert _one(events, "pallas_call_found")["interpret"] is False


def test_mosaic_interpret_and_reference_agree_on_the_chip() -> None:
    """The tileable matmul: compiled through Mosaic, interpreted and jnp.matmul give the same bits
    on the chip (max abs difference 0.0); each differs from float64 by exactly what one bf16 pass
    gives (the TPU's default f32 matmul precision: inputs rounded to bfloat16, products summed in
    f32), recomputed here: 0.0497. The exhibit's stream agrees (allclose, 0.0)."""
    fig = FIGURES["matmul_tiled"]
    assert fig["errors"] == {} and fig["device_kind"] == "TPU v5 lite"
    diffs = fig["max_abs_diff"]
    assert diffs["mosaic-interpret"] == diffs["mosaic-reference"] == 0.0
    x, y = _args("matmul_tiled")
    exact = x.astype(np.float64) @ y.astype(np.float64)

    def bf16(a: np.ndarray) -> np.ndarray:
        return np.asarray(jnp.asarray(a, jnp.bfloat16).astype(jnp.float32), np.float64)

    one_pass = float(np.abs(bf16(x) @ bf16(y) - exact).max())
    assert diffs["mosaic-host_float64"] == pytest.approx(one_pass, rel=1e-6)
    assert one_pass > 1e-2 > float(np.abs(x @ y - exact).max())  # far from f32's own rounding
    (out,) = _one(_raw("matmul_tiled"), "pallas_output_compared")["outputs"]
    assert out["allclose"] is True and out["max_abs_diff"] == 0.0


def test_an_out_of_bounds_block_halts_the_chip() -> None:
    """x is 8x256 and program 2 reads its block (0, 2): the exhibit's index maps say so before the
    run; compiled, the chip's DMA bounds check halts the core (``BoundsCheck`` on
    ``dma.hbm_to_vmem``, window (1, 1) of base (1, 2) in 128-column granules, 3 iterations).
    Interpret mode would have clamped the read. After the halt the process's chip runs nothing
    more (the plain script's interpret run and next snippet failed); a fresh process does."""
    events = _raw("out_of_bounds")
    (finding,) = _one(events, "pallas_call_found")["findings"]
    assert finding["kind"] == "out_of_bounds" and "(0, 2)" in finding["message"]
    failed = events[-1]
    assert failed["type"] == "run_failed" and failed["stage"] == "run"
    for text in (failed["message"], FIGURES["out_of_bounds"]["errors"]["mosaic"]):
        assert "RuntimeUnexpectedCoreHalt" in text and "BoundsCheck" in text
    assert "base_bounds: (1, 2)" in FIGURES["out_of_bounds"]["errors"]["mosaic"]
    (x,) = _args("out_of_bounds")
    assert x.shape[1] // 128 == 2  # 2 blocks of 128 columns: block 2 starts past x
    poisoned = FIGURES["out_of_bounds"]["errors"]["interpret"]
    assert "halted unexpectedly" in poisoned
    assert "halted unexpectedly" in FIGURES["race"]["errors"]["mosaic"]


def test_a_race_on_the_chip() -> None:
    """Both programs of the parallel grid write output block (0, 0): a v5e has one TensorCore,
    which runs them in order, so the chip keeps program 1's block (x[:, 128:256] * 2, here 256 at
    [0, 0] where the reference has 0) and block (0, 1) holds what the buffer held (not the NaN of
    interpret mode): the exhibit's findings race and unwritten, and the mismatch it shows."""
    events = _raw("race")
    kinds = {f["kind"] for f in _one(events, "pallas_call_found")["findings"]}
    assert kinds == {"race", "unwritten"}
    (out,) = _one(events, "pallas_output_compared")["outputs"]
    (x,) = _args("race")
    assert out["allclose"] is False and out["first_diff_index"] == [0, 0]
    assert out["first_diff_got"] == float(x[0, 128] * 2) and out["first_diff_want"] == 0.0
    assert "nan" not in out["preview"].lower()
    assert events[-1]["type"] == "run_finished"
