"""The transpose exhibit opens a ``jax.checkpoint`` step (``remat2``) as it opens a ``jit``: the
backward pass of its body, walked step by step, checked against what the step sent and
``jax.grad``."""

from __future__ import annotations

import jax
import numpy as np
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import run_probe
from exhibits.transpose.events import GradientChecked, TransposeCallOpened, TransposeStepped

SOURCE = (
    "import jax\nimport jax.numpy as jnp\n\n\n"
    "@jax.checkpoint\n"
    "def g(x):\n"
    "    return jnp.sin(x) * x\n\n\n"
    "def f(x):\n"
    "    return g(x).sum()\n\n\n"
    "args = (jnp.array([0.5, 1.0, 2.0]),)\n"
)


def test_a_checkpoint_step_opens_to_the_walk_of_its_body() -> None:
    ctx = run_probe("transpose", SOURCE)
    steps = ctx.of_type(TransposeStepped)
    (remat,) = [s for s in steps if s.primitive == "remat2"]
    (opened,) = ctx.of_type(TransposeCallOpened)
    assert (opened.step, opened.primitive, opened.name) == (remat.step, "remat2", "g")
    (inner,) = opened.walks
    assert inner.iteration is None and inner.truncated == 0
    # The body's linear eqns, attributed to the primal ops of g's JVP, on g's line.
    assert {s.primal_primitive for s in inner.steps} >= {"sin", "mul"}
    assert {s.source.line for s in inner.steps if s.source is not None} == {7}
    # What the inner walk sends back is what the remat2 step sent (the whole gradient here):
    # jax.grad's x*cos(x) + sin(x), as numpy computes it.
    s = load_snippet(SOURCE)
    x = np.asarray(s.args[0], np.float64)
    grad = np.asarray(jax.grad(s.f)(*s.args))
    np.testing.assert_allclose(grad, x * np.cos(x) + np.sin(x), rtol=1e-6)
    (write,) = remat.writes
    assert write.contribution.preview is not None
    check = ctx.one(GradientChecked)
    assert check.equal_to_jax is True
