"""A NaN or an Inf that ``f``'s forward pass makes and its outputs hide is a finding (issue 15,
"Silent changes are findings"): the ``cases/NH*`` snippets (public reports cited in their
docstrings) run through the real sandbox with ``jaxscope run nan_finder FILE --print hidden``.

The truth: plain JAX says the output is finite and the gradient is not; numpy recomputes the
intermediate value the exhibit names as the origin and finds it non-finite; the snippet's text
gives the origin's and the hider's lines. The fixed case must print ``null`` and exit 0.
"""

from __future__ import annotations

import json
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES, jaxscope_run


def hidden(name: str) -> tuple[int, Any, str]:
    proc = jaxscope_run("nan_finder", CASES / f"{name}.py", "--print", "hidden")
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def line_of(name: str, piece: str) -> int:
    """The line of f's body (indented) that holds ``piece``."""
    text = (CASES / f"{name}.py").read_text().splitlines()
    (line,) = [i for i, t in enumerate(text, 1) if piece in t and t.startswith("    ")]
    return line


def plain(name: str) -> tuple[np.ndarray, np.ndarray, tuple[Any, ...]]:
    snippet = load_snippet((CASES / f"{name}.py").read_text())
    out = np.asarray(snippet.f(*snippet.args))
    grad = np.asarray(jax.grad(lambda *a: snippet.f(*a).sum())(*snippet.args))
    return out, grad, tuple(np.asarray(a) for a in snippet.args)


@pytest.mark.parametrize(
    ("name", "origin", "origin_piece", "hider_piece", "kind", "recompute"),
    [
        (
            "NH02_where_arctan2_broken",
            "div",
            "jnp.arctan2(a, a) / a",
            "jnp.where(",
            "nan",
            lambda a: np.arctan2(a, a) / a,
        ),
        (
            "NH03_where_inf_broken",
            "mul",
            "x * jnp.inf",
            "jnp.where(",
            "inf",
            lambda x: x * np.inf,
        ),
    ],
)
def test_a_hidden_forward_nonfinite_value_is_a_finding(
    name: str, origin: str, origin_piece: str, hider_piece: str, kind: str, recompute: Any
) -> None:
    out, grad, args = plain(name)
    assert np.all(np.isfinite(out)) and not np.all(np.isfinite(grad))  # plain JAX
    with np.errstate(all="ignore"):
        born = np.asarray(recompute(*args))
    code, h, stderr = hidden(name)
    assert code == 3 and "HiddenNonfinite" in stderr
    assert h["origin"]["primitive"] == origin and h["origin"]["kind"] == kind
    assert h["origin"]["line"] == line_of(name, origin_piece)
    assert h["count"] == int((~np.isfinite(born)).sum())
    assert h["hider"]["line"] == line_of(name, hider_piece)


def test_the_guarded_input_hides_nothing() -> None:
    out, grad, _ = plain("NH01_where_sqrt_fixed")
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(grad))
    code, h, _ = hidden("NH01_where_sqrt_fixed")
    assert code == 0 and h is None
