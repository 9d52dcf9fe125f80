"""The jvp and vjp chips on integer arguments (break-it review s11): the tangent jaxscope builds
for an integer primal (and the cotangent for an integer output) is the ``float0`` zero of its
shape, as ``jax.jvp``/``jax.vjp`` require, and a ``float0`` value is shown as ``float0[shape]``
(its aval as JAX writes it), not numpy's ``(b'',)``.

Truths: ``jax.jvp``/``jax.vjp`` called directly with ``np.zeros(shape, jax.dtypes.float0)``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.internals.views import preview_value
from jaxscope.protocol import RunOptions

from exhibits.conftest import run_probe
from exhibits.transform_order.events import TransformStackEvaluated

SCALAR = "def f(x):\n    return x * 2\n\nargs = (3,)\n"
VECTOR = "import jax.numpy as jnp\n\ndef f(x):\n    return x * 2\n\nargs = (jnp.arange(3),)\n"


def f(x: Any) -> Any:
    return x * 2


def user_event(src: str, stack: list[str]) -> TransformStackEvaluated:
    ctx = run_probe("transform_order", src, RunOptions(stack=stack))
    event = ctx.of_type(TransformStackEvaluated)[0]
    assert event.group == "user"
    return event


def zero(x: Any) -> Any:
    return np.zeros(np.shape(x), jax.dtypes.float0)


def direct(stack: str, x: Any) -> tuple[Any, Any]:
    if stack == "jvp":
        return jax.jvp(f, (x,), (zero(x),))
    if stack == "vjp":
        out, pullback = jax.vjp(f, x)
        return out, pullback(zero(out))[0]
    assert stack == "vmap,jvp"
    return jax.vmap(lambda a: jax.jvp(f, (a,), (zero(a),)))(x)


@pytest.mark.parametrize(
    ("src", "x", "stack"),
    [
        (SCALAR, 3, "jvp"),
        (SCALAR, 3, "vjp"),
        (VECTOR, jax.numpy.arange(3), "jvp"),
        (VECTOR, jax.numpy.arange(3), "vmap,jvp"),
    ],
)
def test_an_integer_argument_gets_the_float0_tangent(src: str, x: Any, stack: str) -> None:
    event = user_event(src, stack.split(","))
    assert event.ok, event.message
    primal, tangent = direct(stack, x)
    assert np.asarray(tangent).dtype == jax.dtypes.float0
    out, tan = event.result
    assert out.preview == preview_value(primal) and out.shape == list(np.shape(primal))
    assert tan.dtype == "float0" and tan.shape == list(np.shape(tangent))
    assert tan.preview == "float0[" + ",".join(map(str, np.shape(tangent))) + "]"


def test_float0_preview() -> None:
    assert preview_value(np.zeros((), jax.dtypes.float0)) == "float0[]"
    assert preview_value(np.zeros((2, 3), jax.dtypes.float0)) == "float0[2,3]"
