"""``jaxscope run stations --print output`` prints every element of every output (issue 33,
class 8; design 0060): an output whose preview numpy summarises (past 50 elements: ``...``)
comes whole in a run for the CLI (``OutputValuesSent`` after ``program_executed``), and the
printout parses back to ``jax.jit(f)(*args)`` of the same snippet, bit for bit in each output's
dtype (float32, bool, bfloat16, int32)."""

from __future__ import annotations

import ast
import re

import jax
import numpy as np
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import FakeContext, run_probe
from exhibits.registry import EXHIBITS
from exhibits.stations import probe
from exhibits.stations.events import OutputValuesSent

SOURCE = """
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) / 3, x > 0.5, x.astype(jnp.bfloat16) / 3, jnp.arange(60), x[0, :3]


args = (jnp.linspace(0.0, 1.0, 200, dtype=jnp.float32).reshape(20, 10),)
"""


@pytest.fixture(scope="module")
def eager() -> FakeContext:
    return run_probe("stations", SOURCE)


def test_every_summarised_output_comes_whole(eager: FakeContext) -> None:
    sent = eager.of_type(OutputValuesSent)
    assert sorted({e.output for e in sent}) == [0, 1, 2, 3]  # x[0, :3] is printed whole anyway
    text = EXHIBITS["stations"].artefacts["output"](eager.events)
    assert text is not None and "..." not in text
    blocks = text.split("\n")
    snippet = load_snippet(SOURCE)
    want = jax.tree.leaves(jax.jit(snippet.f)(*snippet.args))
    printed = _blocks(blocks)
    assert len(printed) == len(want)
    # the four summarised outputs, exactly; x[0, :3] keeps its preview (6 digits, never cut)
    for got, truth in list(zip(printed, want, strict=True))[:4]:
        truth = np.asarray(truth)
        exact = truth.dtype.kind in "biu"
        values = np.asarray(ast.literal_eval(got), dtype=None if exact else np.float64)
        np.testing.assert_array_equal(values.astype(truth.dtype), truth)


# ``[0]: float32[20, 10]``, ``output: float32[60, 5]``: the line above each printout
HEADER = re.compile(r"^\S*: [a-z0-9]+\[[0-9, ]*\]$")


def _blocks(lines: list[str]) -> list[str]:
    """The printouts under each ``path: dtype[shape]`` header line."""
    out: list[str] = []
    for line in lines:
        if HEADER.match(line):
            out.append("")
        else:
            out[-1] += line
    return out


def test_a_page_run_sends_no_values() -> None:
    ctx = FakeContext(snippet=load_snippet(SOURCE), on_demand=True)
    probe.run(ctx)
    assert not ctx.of_type(OutputValuesSent)


def test_transform_order_prints_its_result_whole() -> None:
    """The same for ``jaxscope run transform_order --print result``: the user's stack's
    outputs past numpy's 50 elements come whole, equal to the stack written as plain JAX."""
    source = """
import jax.numpy as jnp


def f(x):
    return jnp.sum(jnp.sin(x) ** 2)


args = (jnp.linspace(0.0, 1.0, 300, dtype=jnp.float32).reshape(60, 5),)
stack = ["vmap", "grad"]
"""
    ctx = run_probe("transform_order", source)
    assert ctx.of_type(OutputValuesSent)
    text = EXHIBITS["transform_order"].artefacts["result"](ctx.events)
    assert text is not None and "..." not in text
    (got,) = _blocks(text.split("\n"))
    snippet = load_snippet(source)
    want = np.asarray(jax.vmap(jax.grad(snippet.f))(*snippet.args))
    values = np.asarray(ast.literal_eval(got), np.float64).astype(want.dtype)
    np.testing.assert_array_equal(values, want)
