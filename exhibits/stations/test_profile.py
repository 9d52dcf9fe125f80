"""The accelerator's per-instruction profile and the memory peak (design 0073), on the CPU:
the pieces that CI can run without a chip (the TPU's recordings are replayed in
``backend/tests/test_accelerator_profile.py``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jaxscope.internals import buffer_peak, device_profile

from exhibits.stations import profile
from exhibits.stations.artefacts import ARTEFACTS


def mlp(x: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
    h = jnp.tanh(x @ w1)
    return jax.nn.softmax(h @ w2).sum()


ARGS = (jnp.ones((32, 64)), jnp.ones((64, 128)) * 0.01, jnp.ones((128, 16)) * 0.01)


@pytest.fixture(scope="module")
def compiled() -> Any:
    return jax.jit(mlp).lower(*ARGS).compile()


def test_instruction_costs_add_up_to_xla_whole_module(compiled: Any) -> None:
    """Each instruction cut out and analysed alone: the parts sum to XLA's own analysis of the
    whole module (``Compiled.cost_analysis``), FLOPs, bytes and transcendentals."""
    text = compiled.as_text()
    read = device_profile._read_module(text)
    names = [n for n, (comp, _, _) in read.where.items() if comp.entry]
    costs = device_profile.instruction_costs(text, names, jax.devices("cpu")[0].client)
    whole = compiled.cost_analysis()
    for key, field in (("flops", "flops"), ("bytes accessed", "bytes_accessed")):
        assert sum(getattr(c, field) for c in costs.values()) == pytest.approx(whole[key], 1e-6)
    assert sum(c.transcendentals for c in costs.values()) == whole["transcendentals"]
    # the CPU has one memory space: every byte is in the default one
    assert all(c.hbm_bytes == c.bytes_accessed for c in costs.values())


def test_hbm_bytes_leave_out_vmem_operands() -> None:
    cost = {
        "bytes accessed0{}": 100.0,
        "bytes accessed1{}": 10.0,
        "bytes accessedout{0}": 7.0,
        "bytes accessedout{1}": 3.0,
    }
    operands = ["f32[8,128]{1,0:T(8,128)}", "f32[8,128]{1,0:T(8,128)S(1)}"]
    out = "(f32[8]{0:T(256)S(1)}, f32[8,128]{1,0:T(8,128)})"
    assert device_profile.hbm_bytes(cost, operands, out) == 100.0 + 3.0


def test_roofline_arithmetic() -> None:
    # 2e9 FLOPs at 1e12 FLOP/s: 2 ms; 1e6 bytes at 1e9 B/s: 1 ms -> compute-bound, 2 ms
    r = device_profile.roofline(2e9, 1e6, 4e6, 1e12, 1e9)
    assert (r.compute_ns, r.memory_ns, r.bound_ns) == (2e6, 1e6, 2e6)
    assert (r.bound_by, r.intensity, r.fraction) == ("compute", 2000.0, 0.5)
    assert device_profile.roofline(0.0, 0.0, 5.0, 1e12, 1e9).intensity is None


def test_the_profile_on_the_cpu(compiled: Any) -> None:
    """The trace's own numbers: each row is its executions' durations summed per call."""
    record = device_profile.program_profile(compiled, ARGS, {}, calls=3)
    assert record.plane == "/host:CPU" and record.runs_ns == [] and record.peaks is None
    assert record.instructions
    for row in record.instructions:
        assert row.measured_ns == pytest.approx(sum(row.durations_ns) / 3)
        assert row.per_call == len(row.durations_ns) / 3
    event = profile.program_profiled(record, [])
    assert event.ops_ns == pytest.approx(sum(r.measured_ns for r in record.instructions))
    printed = ARTEFACTS["profile"]([event])
    assert printed is not None
    assert all(r.instruction in printed for r in record.instructions)


def test_the_memory_peak_on_the_cpu() -> None:
    """XLA's live-range peak of a program with no temporaries: its arguments and output, as
    ``memory_analysis`` counts them."""
    x = jnp.ones((64, 64))
    compiled, peak = buffer_peak.compile_with_peak(
        jax.jit(lambda x, w: jnp.tanh(x @ w).sum(0)).lower(x, x)
    )
    assert peak is not None
    stats = compiled.memory_analysis()
    assert stats.temp_size_in_bytes == 0
    expected = stats.argument_size_in_bytes + stats.output_size_in_bytes
    assert peak.peak_by_space == {"default": expected}
    assert sum(b.bytes for b in peak.buffers) == expected
    assert [b.bytes for b in peak.buffers] == sorted((b.bytes for b in peak.buffers), reverse=True)
