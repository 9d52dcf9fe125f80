"""Shapes that do not broadcast get a why that names the axis and the sizes (new-user review:
JAX's message names only the shapes). The errors are plain JAX's, raised here; the clash is
checked against numpy's own broadcasting."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.explainers import ErrorContext, explain, first_clash


def raised(fn: Callable[[], Any]) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()
    return info.value


@pytest.mark.parametrize(
    ("fn", "shapes", "axis", "sizes"),
    [
        (lambda: jnp.ones((4, 5)) * jnp.ones((4, 10)), [(4, 5), (4, 10)], -1, (5, 10)),
        (
            lambda: jax.jit(lambda a, b: a + b)(jnp.ones((3, 2)), jnp.ones((4, 2))),
            [(3, 2), (4, 2)],
            -2,
            (3, 4),
        ),
        (
            lambda: jnp.where(jnp.ones(3) > 0, jnp.ones(4), 0.0),
            [(3,), (4,)],
            -1,
            (3, 4),
        ),
    ],
)
def test_the_clash_is_named(
    fn: Callable[[], Any], shapes: list[tuple[int, ...]], axis: int, sizes: tuple[int, int]
) -> None:
    exc = raised(fn)
    with pytest.raises(ValueError):  # numpy agrees that they do not broadcast
        np.broadcast_shapes(*shapes)
    found = explain(exc, ErrorContext())
    assert found is not None
    name, answer = found
    assert name == "jaxscope.explainers.broadcasting"
    assert f"clash at axis {axis}: size {sizes[0]} against {sizes[1]}" in answer.explanation
    assert answer.fix is not None and "x[:, None]" in answer.fix


def test_first_clash_follows_numpys_rule() -> None:
    for shapes in [[(4, 1), (3,)], [(2, 1, 5), (7, 5)], [(), (3,)]]:
        assert first_clash(shapes) is None
        np.broadcast_shapes(*shapes)  # numpy broadcasts them too
    assert first_clash([(2, 3, 5), (4, 5)]) == (-2, 3, 4)
