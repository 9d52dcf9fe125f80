"""Measuring must not change what is measured (issue 15): the recompile hunt's count of the
compiles a loop makes equals what JAX itself logs for the same snippet run as a plain script in a
fresh Python process (``jax_log_compiles``: one "Finished XLA compilation of jit(<name>)" per
compile), so objects the worker keeps alive (its own references, earlier runs) never turn a miss
into a hit, nor the other way round. Cases: the shared C05 pair (``jax.jit`` of a lambda made
inside the loop, and made once outside it) and the recompile hunt's own examples.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from exhibits.conftest import CASES, PLAIN_LOG_GROUP, jaxscope_run, plain_jax_log

# one test process with the other modules reading the same fresh-process logs (conftest)
pytestmark = pytest.mark.xdist_group(PLAIN_LOG_GROUP)

EXAMPLES = Path(__file__).resolve().parent / "examples"


def plain_compiles(path: Path, name: str) -> int:
    """How many times a fresh ``python`` compiles ``jit(<name>)`` while ``f(*args)`` runs."""
    log = plain_jax_log(path)
    return len(re.findall(r"Finished XLA compilation of jit\(" + re.escape(name) + r"\)", log))


def hunted_compiles(path: Path) -> int:
    proc = jaxscope_run("recompile_hunt", path, "--print", "recompiles")
    assert proc.returncode in (0, 3), proc.stderr
    steps = json.loads(proc.stdout)
    assert "stopped" not in steps  # the whole loop ran, as in the plain script
    return len(steps)


@pytest.mark.parametrize(
    ("path", "name"),
    [
        (CASES / "C05_jit_in_loop_broken.py", "<lambda>"),
        (CASES / "C05_jit_in_loop_fixed.py", "<lambda>"),
        (EXAMPLES / "clean_loop.py", "step"),
        (EXAMPLES / "fresh_closure.py", "update"),
        (EXAMPLES / "ragged_batch.py", "step"),
        (EXAMPLES / "weak_type_state.py", "step"),
    ],
    ids=["C05_broken", "C05_fixed", "clean_loop", "fresh_closure", "ragged_batch", "weak_type"],
)
def test_the_hunt_counts_the_compiles_a_fresh_process_makes(path: Path, name: str) -> None:
    plain = plain_compiles(path, name)
    assert plain >= 1
    assert hunted_compiles(path) == plain
