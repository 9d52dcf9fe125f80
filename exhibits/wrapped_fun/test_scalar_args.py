"""``jvp``/``vjp`` on an ``f`` with a Python scalar or an integer argument: the probe's tangents
are what plain JAX takes (float ones; ``float0`` zeros for an integer), and the result printed
is plain ``jax.jvp``'s. Before, ``x.dtype`` of a Python scalar failed the run with
AttributeError at ``def f``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.protocol import RunOptions

from exhibits.conftest import Runner

from .test_wrapped_fun import out_text, watched

SOURCE = """import jax.numpy as jnp


def f(x, n, s):
    return jnp.sin(x) * n + s


args = (jnp.ones(3), 3, 0.5)
"""


def f(x: Any, n: Any, s: Any) -> Any:
    return jnp.sin(x) * n + s


ARGS = (jnp.ones(3), 3, 0.5)
ZERO = np.zeros((), jax.dtypes.float0)


@pytest.mark.parametrize("transform", ["jvp", "vjp"])
def test_scalar_and_integer_arguments(transform: str, probe_runner: Runner) -> None:
    events = probe_runner("wrapped_fun", SOURCE, RunOptions(transform=transform)).events
    if transform == "jvp":
        want = jax.jvp(f, ARGS, (jnp.ones(3), ZERO, jnp.float32(1.0)))
        # d/dt of sin(x + t) * 3 + (0.5 + t) at t = 0: 3 cos(1) + 1
        np.testing.assert_allclose(want[1], 3 * np.cos(1.0) + 1, rtol=1e-6)
    else:
        out, pullback = jax.vjp(f, *ARGS)
        want = (out, pullback(jnp.ones(3)))
        np.testing.assert_allclose(want[1][0], 3 * np.cos(1.0), rtol=1e-6)
    assert watched(events).out == out_text(want)
