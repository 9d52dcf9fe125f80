"""A NaN made inside a library function is blamed on the user's line that called it (issue 15,
"Blame the line the user got wrong"): ``jnp.linalg.norm`` and ``jnp.std`` are jitted library
functions whose bodies JAX traced from its own source, so their eqns carry no snippet line. The
cases (public reports cited in their docstrings) run through the real sandbox with ``jaxscope
run nan_finder FILE --print first_nan``; the truth is plain ``jax.grad`` (it gives non-finite
values) and the snippet's text (the line that calls the library function).
"""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, jaxscope_run


@pytest.mark.parametrize(
    ("name", "call", "library"),
    [
        ("FD01_norm_sq_zero_broken", "jnp.linalg.norm(", "norm"),
        ("NB01_std_constant_broken", "jnp.std(", "std"),
    ],
)
def test_a_nan_inside_a_library_function_is_blamed_on_the_calling_line(
    name: str, call: str, library: str
) -> None:
    text = (CASES / f"{name}.py").read_text()
    snippet = load_snippet(text)
    grad = np.asarray(jax.grad(snippet.f)(*snippet.args))
    assert not np.all(np.isfinite(grad))  # plain JAX: the gradient is broken
    # the call in f's body (the docstring names it too)
    (line,) = [i for i, t in enumerate(text.splitlines(), 1) if call in t and t.startswith("    ")]
    proc = jaxscope_run("nan_finder", CASES / f"{name}.py", "--print", "first_nan")
    assert proc.returncode == 3, proc.stderr  # a NaN gradient is a finding
    assert f"NonfiniteGradient) at line {line}" in proc.stderr
    first = json.loads(proc.stdout)
    assert first["line"] == line
    assert library in first["library_call"]  # "norm", "_std": JAX's name of the jitted body
    assert first["inside"] and first["inside"][-1]["line"] == line
