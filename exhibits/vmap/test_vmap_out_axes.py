"""A wrong ``out_axes`` (issue 31, item 4): ``jax.vmap`` raises after ``f`` returned, so the
error used to point at ``f``'s ``def`` line without naming ``out_axes``. It now names
``out_axes`` and points at the snippet's ``out_axes = ...`` line, as ``in_axes`` errors do (the
view's box sets no snippet line: no line then). JAX's own error class and message are kept: the
truth is plain ``jax.vmap`` with the same axes."""

from __future__ import annotations

from typing import Any

import jax
import pytest
from jaxscope.protocol import RunOptions
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import FakeContext

HEAD = """import jax.numpy as jnp


def f(x, y):
    return {ret}


args = (jnp.ones((4, 3)), jnp.ones((4, 3)))
in_axes = (0, 0)
out_axes = {out_axes}
"""

# (what f returns, the snippet's out_axes): each rejected by jax.vmap after f returned.
WRONG = {
    "axis_past_rank": ("jnp.dot(x, y)", "2"),
    "not_a_prefix": ("(jnp.dot(x, y), x)", "(0, 0, 0)"),
    "none_for_batched": ("jnp.dot(x, y)", "None"),
}


def _failed(source: str, options: RunOptions | None = None) -> Any:
    from exhibits.vmap import probe

    snippet = load_snippet(source)
    ctx = FakeContext(snippet=snippet, options=options or RunOptions())
    with pytest.raises(Exception) as info:
        probe.run(ctx)
    return classify(info.value, "run", snippet.f)


def _truth(source: str, out_axes: Any) -> BaseException:
    ns: dict[str, Any] = {}
    exec(source, ns)
    with pytest.raises(Exception) as truth:
        jax.vmap(ns["f"], in_axes=ns["in_axes"], out_axes=out_axes)(*ns["args"])
    return truth.value


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_out_axes_names_it_at_its_line(name: str) -> None:
    ret, out_axes = WRONG[name]
    source = HEAD.format(ret=ret, out_axes=out_axes)
    failed = _failed(source)
    truth = _truth(source, eval(out_axes))
    assert (failed.error_class, failed.message) == (type(truth).__name__, str(truth))
    assert failed.source is not None
    assert source.splitlines()[failed.source.line - 1] == f"out_axes = {out_axes}"
    assert failed.explanation is not None and f"`out_axes = {out_axes}`" in failed.explanation
    assert failed.during == "while jax.vmap moved the outputs' batch axes (out_axes)"


def test_the_boxs_out_axes_is_named_with_no_snippet_line() -> None:
    source = HEAD.format(ret="jnp.dot(x, y)", out_axes="0")
    failed = _failed(source, RunOptions(out_axes="3"))
    truth = _truth(source, 3)
    assert (failed.error_class, failed.message) == (type(truth).__name__, str(truth))
    assert failed.source is None
    assert failed.explanation is not None
    assert "the out_axes box's `out_axes = 3`" in failed.explanation


def test_an_error_of_f_itself_is_not_blamed_on_out_axes() -> None:
    """A batching failure that out_axes=0 has too (a Python `if` on a batched value) keeps its
    own line and JAX's explanation."""
    source = HEAD.format(ret="x if x.sum() > 0 else y", out_axes="1")
    failed = _failed(source)
    assert failed.source is not None
    assert "x.sum() > 0" in source.splitlines()[failed.source.line - 1]
    assert "out_axes" not in (failed.explanation or "")
