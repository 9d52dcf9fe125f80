"""A run that halted the TPU core retires its worker (design 0073; issue 34's follow-up).

On the chip, an out-of-bounds Pallas block fails the DMA's bounds check and halts the core, and
every later program in the same process fails with "The program continuator has halted
unexpectedly" (``recordings/tpu-v5e/pallas_chip/``). The truth here is the recorded words: the
``run_failed`` of ``out_of_bounds.events.jsonl`` (the exhibit's worker on the chip) and the later
programs' errors of ``pallas_chip.json`` (a plain script). CPU only: the runner's retire check
and ``errors.classify`` are fed those texts.
"""

from __future__ import annotations

import json
from typing import Any

from jax.errors import JaxRuntimeError
from jaxscope.protocol import RunFailed, RunFinished
from jaxscope.sandbox import errors, runner

from tests.harness import REPO

RECORDED = REPO / "recordings" / "tpu-v5e" / "pallas_chip"


def _recorded_failure() -> dict[str, Any]:
    path = RECORDED / "out_of_bounds.events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    failed: list[dict[str, Any]] = [e for e in events if e["type"] == "run_failed"]
    assert len(failed) == 1
    return failed[0]


def _continuator() -> str:
    figures = json.loads((RECORDED / "pallas_chip.json").read_text())
    text: str = figures["race"]["errors"]["mosaic"]
    return text.removeprefix("JaxRuntimeError: ")


def _retire(terminal: RunFinished | RunFailed) -> str | None:
    before = runner.global_state()
    return runner._retire_reason(terminal, runner._started_threads(), 0.0, before)


def test_the_recorded_halts_retire_the_worker() -> None:
    recorded = RunFailed.model_validate(_recorded_failure())
    assert "BoundsCheck" in recorded.message
    assert _retire(recorded) == runner.CORE_HALT_RETIRE
    later = RunFailed(kind="user_exception", error_class="JaxRuntimeError", message=_continuator())
    assert "program continuator has halted unexpectedly" in later.message
    assert _retire(later) == runner.CORE_HALT_RETIRE
    # the same words raised by the user's own code are not the runtime's
    faked = later.model_copy(update={"error_class": "ValueError"})
    assert _retire(faked) is None
    other = RunFailed(kind="user_exception", error_class="JaxRuntimeError", message="INTERNAL: x")
    assert _retire(other) is None
    assert _retire(RunFinished(duration_ms=1.0)) is None


def test_classify_explains_the_halt_and_a_caught_one_still_retires() -> None:
    errors.take_core_halt_seen()
    message = _recorded_failure()["message"]
    failed = errors.classify(JaxRuntimeError(message), "run")
    assert failed.explanation == errors.CORE_HALT_EXPLANATION
    assert "out of bounds" in failed.explanation and "fresh one" in failed.explanation
    assert failed.fix == errors.CORE_HALT_FIX
    # an exhibit that caught the error (its own event, the run finished) still retires
    assert _retire(RunFinished(duration_ms=1.0)) == runner.CORE_HALT_RETIRE
    assert _retire(RunFinished(duration_ms=1.0)) is None  # taken once
    plain = errors.classify(JaxRuntimeError("INTERNAL: something else"), "run")
    assert plain.explanation != errors.CORE_HALT_EXPLANATION
    assert not errors.take_core_halt_seen()
