"""The recompile hunt on an NNX train loop whose optimizer is rebuilt each epoch (issue 33, class
1; ``cases/NJ01``, from https://github.com/google/flax/issues/5548): every epoch compiles, as in
a fresh process, and the cause is JAX's explanation (the optimizer's ``_graphdef`` node
metadata) down to the object that is not equal (the optax transformation), with a fix for that
object, not the input structure's two GraphDef dumps. The fixed loop compiles once."""

from __future__ import annotations

import re
from typing import Any

import pytest

from exhibits.conftest import CASES, PLAIN_LOG_GROUP, plain_jax_log, run_probe

# one test process with the other modules reading the same fresh-process logs (conftest)
pytestmark = pytest.mark.xdist_group(PLAIN_LOG_GROUP)


@pytest.fixture(scope="module", params=["broken", "fixed"])
def hunt(request: pytest.FixtureRequest) -> dict[str, Any]:
    path = CASES / f"NJ01_nnx_optimizer_rebuilt_{request.param}.py"
    steps = [
        e
        for e in run_probe("recompile_hunt", path.read_text()).events
        if e.type == "training_step_observed"
    ]
    plain = re.findall(r"Finished XLA compilation of jit\(train_step\)", plain_jax_log(path))
    return {"variant": request.param, "steps": steps, "plain": len(plain)}


def test_compiled_steps_equal_a_fresh_process(hunt: dict[str, Any]) -> None:
    compiled = [s for s in hunt["steps"] if s.compiled and s.function == "train_step"]
    assert len(compiled) == hunt["plain"]
    assert hunt["plain"] == (2 if hunt["variant"] == "broken" else 1)


def test_cause_names_the_object_and_the_fix(hunt: dict[str, Any]) -> None:
    later = [s for s in hunt["steps"] if s.step > 0 and s.compiled]
    if hunt["variant"] == "fixed":
        assert later == []
        return
    (step,) = later
    assert step.kind == "pytree"
    assert step.cause.startswith(
        "at input path optimizer._graphdef, the pytree node metadata does not match"
    )
    assert "attribute 'tx'" in step.cause and "(from optax)" in step.cause
    assert "GraphDef(nodes=" not in step.cause  # no dump of the two structures
    assert step.fix.startswith("build the optax transformation once, outside the loop")
