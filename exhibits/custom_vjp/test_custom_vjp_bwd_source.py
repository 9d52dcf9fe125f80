"""A bwd rule whose output JAX rejects is pointed at where bwd returns it (break-it review s11:
it was reported at f's line, the end of JAX's traceback, since JAX checks the output after bwd
returned). Truths: JAX's own error (``jax.grad`` here), and the line numbers read from the
snippet text; JAX's location (the call in f) stays on the attempt."""

from __future__ import annotations

import jax
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import run_probe
from exhibits.custom_vjp.events import CustomRuleChecked, RuleProblem

WRONG_SHAPE = """\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def h(x, w):
    return jnp.sum(x * w)


def h_fwd(x, w):
    return h(x, w), (x, w)


def h_bwd(res, g):
    x, w = res
    gx = g * w
    gw = g * x
    return gx, gw[:2]  # w is f32[3]: its cotangent has the wrong shape


h.defvjp(h_fwd, h_bwd)


def f(x, w):
    return h(x, w) * 2.0


args = (jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 0.25, 2.0]))
"""

TWO_RETURNS = WRONG_SHAPE.replace(
    "    x, w = res\n",
    "    x, w = res\n    if x.ndim == 0:\n        return g, g\n",
)


def line_of(source: str, text: str) -> int:
    (i,) = [n for n, ln in enumerate(source.splitlines(), 1) if text in ln]
    return i


def problem_and_attempt(source: str) -> tuple[RuleProblem, CustomRuleChecked]:
    checked = run_probe("custom_vjp", source).one(CustomRuleChecked)
    snippet = load_snippet(source)
    with pytest.raises(ValueError) as want:
        jax.grad(snippet.f, argnums=(0, 1))(*snippet.args)
    p = checked.problems[0]
    assert p.kind == "bwd_shape" and p.error_message == str(want.value)
    return p, checked


def test_wrong_bwd_shape_points_at_bwds_return() -> None:
    p, checked = problem_and_attempt(WRONG_SHAPE)
    src = p.source
    assert src is not None
    assert (src.line, src.function) == (line_of(WRONG_SHAPE, "return gx, gw[:2]"), "h_bwd")
    assert (src.column, src.end_line) == (4, src.line)
    assert checked.attempts[0].source == src  # the attempt chip says what the problem says
    jax_line = line_of(WRONG_SHAPE, "return h(x, w) * 2.0")
    assert f"JAX's traceback ends at line {jax_line} " in p.explanation


def test_a_bwd_with_several_returns_is_pointed_at_its_def() -> None:
    p, _ = problem_and_attempt(TWO_RETURNS)
    src = p.source
    assert src is not None
    assert (src.line, src.function) == (line_of(TWO_RETURNS, "def h_bwd("), "h_bwd")


F_IS_CUSTOM = """\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def f(x):
    return jnp.sum(x * 2.0)


def fwd(x):
    return f(x), x


def bwd(x, g):
    return (jnp.ones(2) * g,)


f.defvjp(fwd, bwd)
args = (jnp.array([1.0, 2.0, 3.0]),)
"""


def test_a_bwd_output_error_with_no_snippet_frame_gets_bwds_return_line() -> None:
    # f is the custom function: JAX's traceback has no snippet line at all (the CLI's stderr
    # said no line); the attempts and the problem now say bwd's return.
    from exhibits.custom_vjp.artefacts import SHOWN_ERRORS

    ctx = run_probe("custom_vjp", F_IS_CUSTOM)
    checked = next(e for e in ctx.events if isinstance(e, CustomRuleChecked))
    snippet = load_snippet(F_IS_CUSTOM)
    with pytest.raises(ValueError) as want:
        jax.grad(snippet.f)(*snippet.args)
    p = checked.problems[0]
    assert p.kind == "bwd_shape" and p.error_message == str(want.value)
    at = line_of(F_IS_CUSTOM, "return (jnp.ones(2) * g,)")
    assert p.source is not None and p.source.line == at
    assert [t.source for t in checked.attempts] == [p.source, p.source]
    assert {s.line for s in SHOWN_ERRORS(ctx.events)} == {at}
