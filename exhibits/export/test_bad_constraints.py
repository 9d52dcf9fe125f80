"""A shape specification or a constraint JAX cannot parse is blamed on the snippet line that
sets it (JAX's message for a bad constraint names no constraint)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jaxscope.sandbox.probe_api import BLAME_ATTR

from exhibits.conftest import Runner

HEAD = """import jax.numpy as jnp
import numpy as np


def f(x):
    return jnp.tanh(x).sum(0)


args = (np.ones((6, 8), np.float32),)
"""


@pytest.mark.parametrize(
    ("shapes", "constraints", "line"),
    [
        ('["(b, 8)"]', '["b >= "]', 11),  # was line 10: the constraint's error was the shapes'
        ('["(b, 8"]', '["b >= 2"]', 10),
        ('["(b, 8)"]', '["b >= 2 2"]', 11),  # 'syntax error in symbolic shape'
        ('["(b, 8)"]', '["b >= ("]', 11),  # tokenize.TokenError
    ],
)
def test_the_line_at_fault(shapes: str, constraints: str, line: int, probe_runner: Runner) -> None:
    source = f"{HEAD}shapes = {shapes}\nconstraints = {constraints}\n"
    x = np.ones((6, 8), np.float32)
    with pytest.raises(Exception) as plain:  # JAX's own error for the same specification
        jax.export.symbolic_args_specs((x,), tuple(eval(shapes)), constraints=eval(constraints))
    with pytest.raises(type(plain.value)) as ours:
        probe_runner("export", source)
    assert str(ours.value) == str(plain.value)
    assert getattr(ours.value, BLAME_ATTR)[0] == line
