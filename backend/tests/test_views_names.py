"""Names users recognise (issue 14): a jaxpr's invars carry the keypaths of their leaves in the
arguments, and an eqn's source carries the snippet frames that called its line."""

from __future__ import annotations

import jax
from jaxscope.internals.views import jaxpr_view
from jaxscope.sandbox.snippet import load_snippet

SOURCE = """\
import jax.numpy as jnp

def layer_norm(x):
    return (x - x.mean()) / (x.std() + 1e-5)

def block(p, x):
    return layer_norm(jnp.tanh(x @ p['w']))

def f(params, x):
    for layer in params['layers']:
        x = block(layer, x)
    return x.sum()

params = {'layers': [{'w': jnp.ones((3, 3))} for _ in range(3)]}
args = (params, jnp.ones(3))
"""


def line_of(text: str) -> int:
    """The 1-based line of SOURCE that contains ``text``."""
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if text in line)


def test_invars_carry_the_keypaths_of_their_leaves() -> None:
    snippet = load_snippet(SOURCE)
    view = jaxpr_view(jax.make_jaxpr(snippet.f)(*snippet.args))
    # Independent truth: tree_util's own paths of the argument leaves, named as keystr does
    # (with the argument's name in front, as JAX's debug_info does).
    leaves, _ = jax.tree_util.tree_flatten_with_path(snippet.args)
    names = ["params", "x"]
    expected = [names[path[0].idx] + jax.tree_util.keystr(path[1:]) for path, _ in leaves]
    assert view.arg_names == expected
    assert view.arg_names[2] == "params['layers'][2]['w']"
    assert len(view.arg_names) == len(view.invars)


def test_an_eqn_names_the_frames_that_called_its_line() -> None:
    snippet = load_snippet(SOURCE)
    view = jaxpr_view(jax.make_jaxpr(snippet.f)(*snippet.args))
    tanh = next(e for e in view.eqns if e.primitive == "tanh")
    assert tanh.source is not None
    assert (tanh.source.line, tanh.source.function) == (line_of("jnp.tanh"), "block")
    assert tanh.source.callers is not None
    assert [(c.line, c.function) for c in tanh.source.callers] == [(line_of("x = block"), "f")]
    sub = next(e for e in view.eqns if e.primitive == "sub")  # x - x.mean() in layer_norm
    assert sub.source is not None and sub.source.callers is not None
    assert sub.source.function == "layer_norm"
    assert [c.line for c in sub.source.callers] == [
        line_of("return layer_norm"),
        line_of("x = block"),
    ]
    total = view.eqns[-1]
    assert total.primitive == "reduce_sum" and total.source is not None
    assert total.source.callers is None  # f's own line: no snippet frame called it
