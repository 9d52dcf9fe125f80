"""``jaxscope run transpose --print gradient`` prints every element of every leaf (issue 33,
class 8; design 0060): a leaf of more than 4,096 elements, which the check summarises for the
page, comes whole in a run for the CLI (``GradientValuesSent`` after ``gradient_checked``), and
the artefact equals ``jax.grad`` bit for bit, each number in its dtype's shortest digits. The
truth: ``jax.grad`` of the snippet's ``f`` in this process, not the worker's."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, FakeContext, jaxscope_run, run_probe
from exhibits.registry import EXHIBITS
from exhibits.transpose.events import GradientChecked, GradientValuesSent

# A 64x100 float32 weight (6,400 elements: summarised for the page), a float16 bias of 5,000
# and a small input (sent with the check itself).
SOURCE = """
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)


def f(w, b, x):
    h = (x @ w).astype(jnp.float16) + b
    return jnp.sum(jnp.tanh(h.astype(jnp.float32)) ** 2)


args = (
    jnp.asarray(rng.normal(size=(64, 5000)) / 8, jnp.float32),
    jnp.asarray(rng.normal(size=(5000,)), jnp.float16),
    jnp.asarray(rng.normal(size=(4, 64)), jnp.float32),
)
"""


@pytest.fixture(scope="module")
def eager() -> FakeContext:
    return run_probe("transpose", SOURCE)


def test_the_summarised_leaves_come_whole_and_equal_jax_grad(eager: FakeContext) -> None:
    checked = eager.one(GradientChecked)
    assert [leaf.sent for leaf in checked.leaves] == [False, False, True]
    sent = eager.of_type(GradientValuesSent)
    assert {e.leaf for e in sent} == {0, 1}
    assert sum(e.count for e in sent if e.leaf == 0) == 64 * 5000
    text = EXHIBITS["transpose"].artefacts["gradient"](eager.events)
    assert text is not None and "null" not in text
    snippet = load_snippet(SOURCE)
    want = jax.grad(snippet.f, argnums=(0, 1, 2))(*snippet.args)
    for got, truth in zip(json.loads(text), want, strict=True):
        truth = np.asarray(truth)
        # the shortest digits of each value in its own dtype parse back to the same value
        np.testing.assert_array_equal(np.asarray(got, np.float64).astype(truth.dtype), truth)


def test_a_page_run_streams_no_values() -> None:
    ctx = FakeContext(snippet=load_snippet(SOURCE), on_demand=True)
    from exhibits.transpose import probe

    probe.run(ctx)
    assert not ctx.of_type(GradientValuesSent)
    assert ctx.one(GradientChecked).leaves_not_sent == 2


def test_the_cli_prints_the_whole_gradient() -> None:
    """Through ``jaxscope run``: the worker, the supervisor and the CLI's whole events."""
    path = CASES / "WA01_embedding_grad.py"
    proc = jaxscope_run("transpose", path, "--print", "gradient")
    assert proc.returncode == 0, proc.stderr
    snippet = load_snippet(path.read_text())
    want = jax.grad(snippet.f)(*snippet.args)  # argnums 0: the params
    got = json.loads(proc.stdout)
    flat_want = jax.tree.leaves(want)
    # one entry per argument: the params' leaves (sorted keys), null for the int tokens
    assert len(got) == 2 and got[1] is None and len(got[0]) == len(flat_want)
    assert "null" not in json.dumps(got[0])
    for g, w in zip(got[0], flat_want, strict=True):
        w = np.asarray(w)
        np.testing.assert_array_equal(np.asarray(g, np.float64).astype(w.dtype), w)
