"""The output comparison's tolerance for the narrow float dtypes numpy does not call floats
(bfloat16): a kernel and its reference that round differently by one bfloat16 spacing agree."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from exhibits.conftest import Runner

from .events import PallasOutputCompared

SNIPPET = """
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl


def kernel(x_ref, o_ref):
    o_ref[...] = jnp.exp(x_ref[...]) * 3.0


def f(x):
    return pl.pallas_call(
        kernel,
        grid=(2,),
        in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
        out_specs=pl.BlockSpec((4,), lambda i: (i,)),
        out_shape=jax.ShapeDtypeStruct((8,), jnp.bfloat16),
        interpret=True,
    )(x)


def reference(x):
    return (np.exp(np.asarray(x, np.float64)) * 3.0).astype(jnp.bfloat16)


args = (jnp.linspace(0.1, 2.3, 8, dtype=jnp.bfloat16),)
"""


def test_bfloat16_output_is_compared_at_bfloat16_tolerance(probe_runner: Runner) -> None:
    ns: dict[str, object] = {}
    exec(SNIPPET, ns)
    x = ns["args"][0]  # type: ignore[index]
    # the truth: bf16 exp(x) * 3 in JAX and float64's, rounded once to bf16, differ by one
    # bf16 spacing in three places (4.5625 vs 4.53125 at x[1]), each within 1e-2 * max(1, |ref|)
    got = np.asarray(jnp.exp(x) * 3.0, np.float64)
    want = np.asarray(ns["reference"](x), np.float64)  # type: ignore[operator]
    gap = np.abs(got - want)
    assert np.count_nonzero(gap) == 3 and np.all(gap <= 1e-2 * np.maximum(1, np.abs(want)))
    ctx = probe_runner("pallas", SNIPPET)
    (out,) = ctx.one(PallasOutputCompared).outputs
    assert out.aval.short == "bf16[8]"
    assert out.tolerance == 1e-2  # was 0.0: bfloat16 compared as exactly as an integer
    assert out.max_abs_diff == float(np.abs(got - want).max())
    assert out.allclose is True and out.first_diff_index is None
