"""An accumulating kernel that comes back to an output block after other blocks (index map
``i % 2`` on a grid of 4) is a finding: JAX's ``pl.RevisitMode`` says an output buffer can be
revisited only on the next grid point by default ("If revisited at any other iteration, the
buffer state should be considered undefined"). Before, it was a note that called the
accumulation correct where the axis runs in order. Consecutive revisits (the k-axis matmul) and
``revisit=pl.RevisitMode.ANY`` stay findings-free."""

from __future__ import annotations

import numpy as np
from jax.experimental import pallas as pl

from exhibits.conftest import Runner

from .events import PallasCallFound, PallasOutputCompared

SNIPPET = """import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def acc_kernel(x_ref, o_ref):
    @pl.when(pl.program_id(0) < 2)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += x_ref[...]


def f(x):
    return pl.pallas_call(
        acc_kernel,
        grid=(4,),
        in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
        out_specs=OUT_SPEC,
        out_shape=jax.ShapeDtypeStruct((8,), jnp.float32),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",)),
        interpret=True,
    )(x)


def reference(x):
    return jnp.concatenate([x[0:4] + x[8:12], x[4:8] + x[12:16]])


args = (np.arange(16, dtype=np.float32),)
"""
LATER = "pl.BlockSpec((4,), lambda i: (i % 2,))"
ANY = (
    "pl.BlockSpec((4,), lambda i: (i % 2,), "
    "pipeline_mode=pl.Buffered(2, revisit=pl.RevisitMode.ANY))"
)


def test_a_block_revisited_after_others_is_a_finding(probe_runner: Runner) -> None:
    # the grid's writers of output block 0 are instances 0 and 2 (block 1 in between)
    index_map = pl.BlockSpec((4,), lambda i: (i % 2,)).index_map
    assert index_map is not None
    assert [index_map(i) for i in range(4)] == [(0,), (1,), (0,), (1,)]
    ctx = probe_runner("pallas", SNIPPET.replace("OUT_SPEC", LATER))
    (call,) = [e for e in ctx.events if isinstance(e, PallasCallFound)]
    assert [f.kind for f in call.findings] == ["revisited_later"]
    assert "block (0,) is written by program instance (0,), then by others, then again by (2,)" in (
        call.findings[0].message
    )
    assert call.notes == []
    # interpret mode hides it: the output equals numpy's sums
    (out,) = ctx.one(PallasOutputCompared).outputs
    assert out.allclose is True
    x = np.arange(16, dtype=np.float32)
    assert out.max_abs_diff == 0.0 and np.array_equal(x[0:4] + x[8:12], [8, 10, 12, 14])


def test_revisit_any_is_not_a_finding(probe_runner: Runner) -> None:
    ctx = probe_runner("pallas", SNIPPET.replace("OUT_SPEC", ANY))
    (call,) = [e for e in ctx.events if isinstance(e, PallasCallFound)]
    assert call.findings == [] and len(call.notes) == 1
