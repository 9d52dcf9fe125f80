"""The review of an NNX train loop (issue 33, class 1; ``cases/NJ01`` from
https://github.com/google/flax/issues/5548): the module, ``Rngs`` and optimizer built each epoch
are not reported as host-to-device copies of the step (their constructors put initial values on
the device once per object), and the rebuilt optax transformation that makes ``jit(train_step)``
compile again is a ``StaticChanged`` finding at the call's line, with JAX's explanation down to
the object and the fix. Truth: the snippet's ``f`` run twice (the review's two steps) as a plain
script in a fresh process compiles ``jit(train_step)`` 4 times broken and once fixed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from exhibits.conftest import CASES, run_probe
from exhibits.review.events import ReviewFindingsFound

_TWICE = """
import runpy, sys
ns = runpy.run_path(sys.argv[1])
for _ in range(2):
    ns["f"](*ns["args"])
"""


@pytest.fixture(scope="module", params=["broken", "fixed"])
def reviewed(request: pytest.FixtureRequest) -> dict[str, Any]:
    path = CASES / f"NJ01_nnx_optimizer_rebuilt_{request.param}.py"
    events = run_probe("review", path.read_text()).events
    (found,) = [e for e in events if isinstance(e, ReviewFindingsFound)]
    proc = subprocess.run(
        [sys.executable, "-c", _TWICE, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAX_LOG_COMPILES": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    compiles = len(re.findall(r"Finished XLA compilation of jit\(train_step\)", proc.stderr))
    return {"variant": request.param, "path": path, "findings": found.findings, "plain": compiles}


def test_module_construction_is_no_host_to_device_finding(reviewed: dict[str, Any]) -> None:
    assert [f for f in reviewed["findings"] if f.kind == "HostToDevice"] == []


def test_static_change_found_at_the_call_with_the_fix(reviewed: dict[str, Any]) -> None:
    if reviewed["variant"] == "fixed":
        assert reviewed["plain"] == 1
        assert reviewed["findings"] == []
        return
    assert reviewed["plain"] == 4
    (finding,) = reviewed["findings"]
    lines = reviewed["path"].read_text().splitlines()
    assert finding.kind == "StaticChanged"
    assert "losses.append(train_step(" in lines[finding.line - 1]
    assert finding.message.startswith(f"JAX compiled train_step {reviewed['plain']} times")
    assert "optimizer._graphdef, the pytree node metadata does not match" in finding.message
    assert "attribute 'tx'" in finding.message
    assert finding.fix.startswith("build the optax transformation once, outside the loop")
