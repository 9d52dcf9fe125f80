"""A gradient that disagrees with the finite differences is blamed on the user's custom rule on
its path (issue 15, "Blame the line the user got wrong"): the finding's line is where the
``custom_vjp`` backward rule returns, not the call in ``f``, and the headline names the rule. The
cases cite the reports they come from (jax-ml/jax#13048; the custom-derivative tutorial's
``log1pexp``, its rule inside a jitted loss). The truth: plain ``jax.grad`` against numpy
central differences in float64 (they disagree for the broken rules, agree for the fix), and the
line of the rule's ``return`` in the snippet's text.
"""

from __future__ import annotations

import json
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.sandbox.snippet import load_snippet

from exhibits.conftest import CASES
from testkit import run_cli


def plain_disagrees(name: str) -> bool:
    """Whether ``jax.grad`` differs from float64 central differences past 1e-3 anywhere."""
    s = load_snippet((CASES / f"{name}.py").read_text())
    args = [np.asarray(a, np.float64) for a in s.args]
    grads = jax.grad(s.f, argnums=tuple(range(len(args))))(*s.args)

    def loss(*a: Any) -> float:
        return float(s.f(*[np.asarray(x, np.float32) for x in a]))

    for i, (a, g) in enumerate(zip(args, grads, strict=True)):
        for index in np.ndindex(a.shape):
            h = 1e-3
            up, down = [x.copy() for x in args], [x.copy() for x in args]
            up[i][index] += h
            down[i][index] -= h
            fd = (loss(*up) - loss(*down)) / (2 * h)
            if abs(float(np.asarray(g)[index]) - fd) > 1e-2 * max(1.0, abs(fd)):
                return True
    return False


def return_line(name: str, rule: str) -> int:
    """The line of the ``return`` in the snippet's ``def <rule>``."""
    lines = (CASES / f"{name}.py").read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if t.startswith(f"def {rule}("))
    return next(i + 1 for i in range(start, len(lines)) if lines[i].strip().startswith("return"))


@pytest.mark.parametrize(
    ("name", "rule"),
    [("FD05_custom_vjp_sign_broken", "f_bwd"), ("CR01_log1pexp_bwd_broken", "log1pexp_bwd")],
)
def test_a_wrong_custom_rule_is_blamed_at_its_return(name: str, rule: str) -> None:
    assert plain_disagrees(name)
    proc = run_cli(
        "run", "transpose", str(CASES / f"{name}.py"), "--print", "verdict", cwd=CASES.parent
    )
    line = return_line(name, rule)
    assert proc.returncode == 3, proc.stderr
    assert f"(GradientMismatch) at line {line}" in proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "disagree"
    assert f"custom_vjp rule {rule} (returns at line {line})" in verdict["headline"]


def test_the_fixed_rule_agrees_and_blames_nothing() -> None:
    assert not plain_disagrees("CR01_log1pexp_bwd_fixed")
    fixed = str(CASES / "CR01_log1pexp_bwd_fixed.py")
    proc = run_cli("run", "transpose", fixed, "--print", "verdict", cwd=CASES.parent)
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["verdict"] == "agree" and "custom_vjp rule" not in verdict["headline"]
