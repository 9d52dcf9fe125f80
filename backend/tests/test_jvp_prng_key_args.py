"""A PRNG key argument under the jvp exhibit: its default tangent is the float0 zero (as for
ints: ``core.primal_dtype_to_tangent_dtype``), its values preview as JAX's repr, and the JVP
matches ``jax.jvp`` with that tangent (found by a break-it review: it failed converting the key
to numpy)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.internals.jvp_steps import choose_tangents
from jaxscope.internals.views import preview_value

from exhibits.conftest import run_probe
from exhibits.jvp.events import JvpJaxprStaged

SOURCE = (
    "import jax\nimport jax.numpy as jnp\n\n\n"
    "def f(x, k):\n"
    "    return (jax.random.normal(k, x.shape) * x).sum()\n\n\n"
    "args = (jnp.ones(3), jax.random.key(0))\n"
)


def test_a_key_gets_the_float0_tangent() -> None:
    x, k = jnp.ones(3), jax.random.key(0)
    tx, tk = choose_tangents((x, k))
    assert np.asarray(tx).tolist() == [1.0, 1.0, 1.0]
    assert tk.dtype == jax.dtypes.float0 and tk.shape == ()


def test_the_jvp_exhibit_runs_with_a_key_argument_and_matches_jax_jvp() -> None:
    staged = run_probe("jvp", SOURCE).one(JvpJaxprStaged)
    x, k = jnp.ones(3), jax.random.key(0)

    def f(x: jax.Array, k: jax.Array) -> jax.Array:
        return (jax.random.normal(k, x.shape) * x).sum()

    p, t = jax.jvp(f, (x, k), (jnp.ones(3), np.zeros((), jax.dtypes.float0)))
    assert staged.matches_jax_jvp
    # The previews print JAX's values as numpy does (float32 digits, 6 after the point).
    assert staged.primals_out[0].preview == preview_value(np.asarray(p))
    assert staged.tangents_out[0].preview == preview_value(np.asarray(t))
    assert float(staged.primals_out[0].preview) == pytest.approx(float(p), abs=5e-7)
