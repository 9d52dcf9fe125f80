"""The plain Python loop of ``examples/real/loop_20k.py`` at another size, for the tests that
need its shape but not its 20,001 eqns (the e2e step-cap tests, ``test_eqn_ranges``). No
Playwright here: the backend tests import it too."""

from __future__ import annotations

from pathlib import Path

REAL = Path(__file__).resolve().parent.parent / "examples" / "real"


def real_loop(iterations: int) -> str:
    """``examples/real/loop_20k.py`` with ``iterations`` iterations (4 eqns each, then the sum):
    1,000 give 4,001 eqns, past the step caps (2,000) at a fifth of the 20k loop's cost."""
    code = (REAL / "loop_20k.py").read_text()
    assert "ITERATIONS = 5_000\n" in code
    return code.replace("ITERATIONS = 5_000\n", f"ITERATIONS = {iterations:_}\n")
