"""Randomness that does not advance (issue 33, class 2): RNG state updated inside a trace and
never written back gives the same random numbers on every call. The cases (``cases/RN*``, each
from a public report): an NNX Dropout under plain jax.jit through nnx.split/merge (RN01) and as a
module argument of jax.jit (RN02), a key kept in an object attribute (RN03) and a global raw key
(RN04) read inside a jitted function.

Truth: each snippet run as a plain script in a fresh process: the broken one's two calls give
equal random outputs, the fixed one's differ. The exhibit: the broken one gives a finding at the
line the repeat happened, with the fix for its kind (nnx.jit / returning the state for NNX, the
key passed in and returned otherwise), and the fixed one (that fix applied) none.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import testkit
from exhibits.conftest import CASES, run_probe
from exhibits.prng.events import FIX_MARK, KeyReuseChecked

# case -> (the text of the line the finding is at, the fix's opening words)
CASES_AT = {
    "RN01_nnx_merge_dropout": ("return self.dropout(self.linear(x))", "use nnx.jit"),
    "RN02_nnx_module_arg": ("return module(x)", "use nnx.jit"),
    "RN03_key_attribute": ("return [sample(x) for _ in range(2)]", "pass the key in"),
    "RN04_closure_key": ("return x + jax.random.normal(KEY)", "pass the key in"),
}

_PLAIN = """
import runpy, sys
import numpy as np
ns = runpy.run_path(sys.argv[1])
out = ns["f"](*ns["args"])
print(all(np.array_equal(np.asarray(out[0]), np.asarray(o)) for o in out[1:]))
"""


def _plain_repeats(path: Path) -> bool:
    """Whether the calls of ``f`` gave equal outputs, in a fresh ``python`` running the snippet."""
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN, str(path)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1] == "True"


def _line(path: Path, text: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if t.strip() == text)


# `make test` runs a sample of the pairs (RN01 and another), `make test-all` all four (design 0058).
PAIRS = ["RN01_nnx_merge_dropout", *testkit.sample(list(CASES_AT)[1:], 1, key="rn_cases")]


@pytest.fixture(
    scope="module",
    params=[(c, v) for c in PAIRS for v in ("broken", "fixed")],
    ids=lambda p: f"{p[0]}_{p[1]}",
)
def case(request: pytest.FixtureRequest) -> dict[str, Any]:
    name, variant = request.param
    path = CASES / f"{name}_{variant}.py"
    events = run_probe("prng", path.read_text()).events
    (checked,) = [e for e in events if isinstance(e, KeyReuseChecked)]
    return {
        "name": name,
        "variant": variant,
        "path": path,
        "findings": checked.findings,
        "repeats": _plain_repeats(path),
    }


def test_plain_jax_repeats_only_the_broken(case: dict[str, Any]) -> None:
    assert case["repeats"] == (case["variant"] == "broken")


def test_finding_at_the_line_with_the_fix(case: dict[str, Any]) -> None:
    if case["variant"] == "fixed":
        assert case["findings"] == []
        return
    line_text, fix_start = CASES_AT[case["name"]]
    (finding,) = case["findings"]
    assert finding.line == _line(case["path"], line_text)
    assert finding.message is not None and FIX_MARK in finding.message
    what, fix = finding.message.split(FIX_MARK, 1)
    assert "randomness does not advance" in what
    assert fix.startswith(fix_start)
