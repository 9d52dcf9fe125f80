"""The run bar's "Starting a TensorFlow sandbox worker… ~N s" estimate learns from this server's
own starts (``WorkerPool.start_estimate_s``): the constant of the kind before any start, then the
median of the last ``START_SAMPLES`` measured starts of that kind, in every pool of the server.

The worker start is replaced by one that takes a known time (``asyncio.sleep``), timed by the
test itself: what is checked is the pool's bookkeeping, not a worker (the real start's report is
test_sandbox_hardening_server's ``worker_starting`` test).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

import pytest
from jaxscope.sandbox.pool import FIRST_START_S, START_SAMPLES, WorkerPool
from jaxscope.sandbox.worker import WorkerProcess
from jaxscope.settings import Limits

from testkit import run_async


class _Started:
    """What the pool keeps of a started worker here: it is closed when the pool closes."""

    alive = True

    async def close(self) -> None:
        self.alive = False


def test_estimate_is_the_median_of_the_last_measured_starts_per_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    delays = iter([0.30, 0.05, 0.20, 0.10, 0.40, 0.25, 0.15])
    took: dict[str, list[float]] = {"tf": [], "jax": []}

    async def spawn(cls: Any, limits: Limits, kind: str = "jax") -> _Started:
        t0 = time.monotonic()
        await asyncio.sleep(next(delays))
        took[kind].append(time.monotonic() - t0)
        return _Started()

    monkeypatch.setattr(WorkerProcess, "spawn", classmethod(spawn))

    async def scenario() -> None:
        main = WorkerPool(Limits(), size=0)
        tf = main._beside("tf", Limits())
        tf_other = main._beside("tf", Limits(wall_s=Limits().wall_s + 1))
        assert tf.start_estimate_s() == FIRST_START_S["tf"] == tf_other.start_estimate_s()
        for _ in range(2):
            await tf._start_one()
        # Either pool of the kind answers from the same measured starts.
        assert tf_other.start_estimate_s() == pytest.approx(statistics.median(took["tf"]), abs=0.02)
        for _ in range(4):
            await tf_other._start_one()
        last = took["tf"][-START_SAMPLES:]
        assert len(took["tf"]) == 6 and len(last) == START_SAMPLES
        assert tf.start_estimate_s() == pytest.approx(statistics.median(last), abs=0.02)
        # Another kind keeps its own: nothing measured for jax yet, then its one start.
        assert main.start_estimate_s() == FIRST_START_S["jax"]
        await main._start_one()
        assert main.start_estimate_s() == pytest.approx(took["jax"][0], abs=0.02)
        for p in (tf, tf_other, main):
            await p.close()

    run_async(scenario())
