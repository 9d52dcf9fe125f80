"""The gradient check's finite-difference sample (``probe.FD_ELEMENTS``, ``probe.FD_PER_LEAF``;
docs/design/0081-transpose-capture-round-3.md) still flags a wrong ``custom_vjp`` rule that
touches one leaf only, or one element only of a gradient within ``FD_ELEMENTS``.

The truth is plain JAX: ``jax.grad`` of the same function with the right rule (a plain jnp
expression), against which the wrong rule's gradient is shown to differ at that leaf or element
only, and the float64 finite differences the check took there are held to it.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.finite_diff import central_differences
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import run_probe
from exhibits.transpose.events import GradientChecked
from exhibits.transpose.probe import FD_ELEMENTS, FD_PER_LEAF

# One scalar leaf ``b`` between two 800-element leaves (jax.tree.leaves: a, b, c): its
# custom_vjp rule returns the sum of the cotangents with the wrong sign. The 1,601 elements are
# past FD_ELEMENTS, so the differences are a sample.
ONE_LEAF = """
import jax
import jax.numpy as jnp
import numpy as np


@jax.custom_vjp
def shift(h, b):
    return h + b


def shift_fwd(h, b):
    return shift(h, b), None


def shift_bwd(_, g):
    return g, -jnp.sum(g)  # the sign error: d/db is +sum(g)


shift.defvjp(shift_fwd, shift_bwd)


def f(params):
    h = jnp.tanh(0.5 * params["a"])
    return jnp.sum(jnp.sin(shift(h, params["b"])) * params["c"])


def right(params):
    h = jnp.tanh(0.5 * params["a"])
    return jnp.sum(jnp.sin(h + params["b"]) * params["c"])


rng = np.random.default_rng(0)
params = {
    "a": rng.standard_normal(800).astype(np.float32),
    "b": np.float32(0.3),
    "c": rng.standard_normal(800).astype(np.float32),
}
args = (params,)
"""

# 500 elements (within FD_ELEMENTS): the rule's cotangent is doubled at element 137 only.
ONE_ELEMENT = """
import jax
import jax.numpy as jnp
import numpy as np


@jax.custom_vjp
def soft(x):
    return jnp.tanh(x)


def soft_fwd(x):
    y = jnp.tanh(x)
    return y, y


def soft_bwd(y, g):
    return ((1 - y**2) * g.at[137].multiply(2.0),)  # wrong at one element


soft.defvjp(soft_fwd, soft_bwd)


def f(x):
    return jnp.sum(soft(x) * jnp.cos(x))


def right(x):
    return jnp.sum(jnp.tanh(x) * jnp.cos(x))


x = np.linspace(-2.0, 2.0, 500).astype(np.float32)
args = (x,)
"""


def _truth(source: str) -> tuple[Any, list[np.ndarray], list[np.ndarray]]:
    """The snippet, and the leaves of ``jax.grad`` of its ``f`` (the wrong rule) and of its
    ``right`` (the same function with JAX's own rules)."""
    snippet = load_snippet(source)
    wrong = jax.tree.leaves(jax.grad(snippet.namespace["f"])(*snippet.args))
    right = jax.tree.leaves(jax.grad(snippet.namespace["right"])(*snippet.args))
    return snippet, [np.asarray(w) for w in wrong], [np.asarray(r) for r in right]


def test_a_wrong_rule_on_one_small_leaf_is_flagged_in_a_sampled_check() -> None:
    snippet, wrong, right = _truth(ONE_LEAF)
    # The rule is wrong at leaf b only (a and c are JAX's own gradient there).
    np.testing.assert_allclose(wrong[0], right[0], rtol=1e-6)
    np.testing.assert_allclose(wrong[2], right[2], rtol=1e-6)
    assert float(wrong[1]) == pytest.approx(-float(right[1]), rel=1e-6)
    assert abs(float(right[1])) > 0.1
    # An even spread of FD_ELEMENTS over the 1,601 elements alone would skip b (element 800).
    even = central_differences(snippet.namespace["f"], snippet.args, [0], max_elements=FD_ELEMENTS)
    assert even.sampled is not None
    assert not bool(np.asarray(jax.tree.leaves(even.sampled[0])[1]))

    check = run_probe("transpose", ONE_LEAF).one(GradientChecked)
    assert check.elements == 1601 and check.fd_sampled is not None
    assert check.fd_sampled <= FD_ELEMENTS < check.elements
    by_path = {leaf.path: leaf for leaf in check.leaves}
    # A few of each leaf (FD_PER_LEAF, fewer only when the sample has less room per leaf).
    assert [leaf.size for leaf in check.leaves] == [800, 1, 800]
    assert all(leaf.fd_sampled >= min(leaf.size, FD_PER_LEAF) for leaf in check.leaves)
    b = by_path["args[0]['b']"]
    assert b.fd_sampled == b.checked == b.disagree == 1
    assert by_path["args[0]['a']"].disagree == by_path["args[0]['c']"].disagree == 0
    assert check.verdict == "disagree" and check.disagree_count == 1
    first = check.disagreements[0]
    assert first.path == "args[0]['b']"
    # The difference the check took at b is the right derivative (float64 against float32).
    assert b.finite_difference == pytest.approx(float(right[1]), rel=1e-4)
    assert b.gradient == pytest.approx(float(wrong[1]), rel=1e-6)


def test_a_wrong_rule_at_one_element_is_flagged_within_fd_elements() -> None:
    _, wrong, right = _truth(ONE_ELEMENT)
    (w,), (r,) = wrong, right
    differs = np.flatnonzero(~np.isclose(w, r, rtol=1e-5, atol=1e-6))
    assert differs.tolist() == [137]
    check = run_probe("transpose", ONE_ELEMENT).one(GradientChecked)
    assert check.elements == check.fd_sampled == 500 <= FD_ELEMENTS  # every element differenced
    assert check.verdict == "disagree" and check.disagree_count == 1
    first = check.disagreements[0]
    assert first.path == "args[0]" and list(first.index) == [137]
    fd = check.finite_difference[0]
    assert fd is not None and fd[137] == pytest.approx(float(r[137]), rel=1e-4)
    assert check.gradient[0][137] == pytest.approx(float(w[137]), rel=1e-6)


# Twelve 3-element leaves: with the sample cut to 8 elements (fewer than the leaves), the
# per-leaf quota is 0 and the even spread alone leaves some leaves without a difference.
MANY_LEAVES = """
import jax.numpy as jnp
import numpy as np


def f(xs):
    return sum(jnp.sum(jnp.sin(x) * (i + 1)) for i, x in enumerate(xs))


args = ([np.linspace(-1.0, 1.0, 3).astype(np.float32) + i for i in range(12)],)
"""


def test_a_sample_smaller_than_the_leaves_does_not_claim_a_few_of_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from exhibits.transpose import probe

    monkeypatch.setattr(probe, "FD_ELEMENTS", 8)
    check = run_probe("transpose", MANY_LEAVES).one(GradientChecked)
    assert check.elements == 36 and check.fd_sampled == 8
    none = [leaf.path for leaf in check.leaves if leaf.fd_sampled == 0]
    assert len(none) == 4  # 12 leaves, 8 samples spread evenly: at most 8 leaves get one
    # The sampled elements agree with jax.grad's cos(x) * (i + 1), so the verdict is "agree".
    snippet = load_snippet(MANY_LEAVES)
    truth = jax.grad(snippet.namespace["f"])(*snippet.args)
    for leaf, want in zip(check.leaves, truth, strict=True):
        assert leaf.gradient == pytest.approx(np.asarray(want).tolist(), rel=1e-6)
    assert check.verdict == "agree"
    assert "a few of each leaf" not in check.headline
    assert "8 sampled elements (of 36, evenly spaced; 4 leaves not sampled at all)" in (
        check.headline
    )
