"""The private JAX and XLA facts ``jaxscope.internals.device_profile`` and ``buffer_peak``
rely on (design 0073), one test each: when JAX or XLA changes one of them, this fails by name
instead of the accelerator's profile or memory peak showing nothing."""

from __future__ import annotations

import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
from jax._src.lib import _jax, _profiler
from jaxlib import _hlo  # type: ignore[attr-defined]


def _f(x: jax.Array) -> jax.Array:
    return jnp.tanh(x @ x).sum()


X = jnp.ones((16, 16))


def test_a_profiler_session_returns_an_xspace_that_profile_data_reads() -> None:
    compiled = jax.jit(_f).lower(X).compile()
    compiled(X).block_until_ready()
    session = _profiler.ProfilerSession()
    compiled(X).block_until_ready()
    xspace = session.stop()
    assert isinstance(xspace, bytes)
    data = jax.profiler.ProfileData.from_serialized_xspace(xspace)
    names = [plane.name for plane in data.planes]
    assert "/host:CPU" in names
    # the CPU's thunks carry the HLO op's name and module as stats
    stats = {
        key
        for plane in data.planes
        for line in plane.lines
        for event in line.events
        for key, _ in event.stats
    }
    assert {"hlo_op", "hlo_module"} <= stats


def test_an_hlo_module_parses_from_text_and_its_cost_has_per_operand_bytes() -> None:
    text = (
        "HloModule m\n\nENTRY e {\n  p0 = f32[8,128]{1,0} parameter(0)\n"
        "  p1 = f32[8,128]{1,0} parameter(1)\n  ROOT a = f32[8,128]{1,0} add(p0, p1)\n}\n"
    )
    module = _hlo.hlo_module_from_text(text)
    cost = _jax.hlo_module_cost_analysis(jax.devices("cpu")[0].client, module)
    assert cost["flops"] == 8 * 128
    assert cost["bytes accessed0{}"] == cost["bytes accessed1{}"] == 8 * 128 * 4
    assert cost["bytes accessedout{}"] == 8 * 128 * 4
    assert cost["bytes accessed"] == 3 * 8 * 128 * 4


def test_the_dump_options_write_the_buffer_assignment_and_live_range_files() -> None:
    with tempfile.TemporaryDirectory() as folder:
        jax.jit(_f).lower(X).compile({"xla_dump_to": folder, "xla_dump_hlo_as_text": True})
        files = [p.name for p in Path(folder).iterdir()]
        live = [n for n in files if n.endswith("after_optimizations-live-range.txt")]
        assert live and any(n.endswith("after_optimizations-buffer-assignment.txt") for n in files)
        assert any(n.endswith("after_optimizations-memory-usage-report.txt") for n in files)
        text = (Path(folder) / live[0]).read_text()
        assert "(peak):" in text and "Live ranges at " in text
