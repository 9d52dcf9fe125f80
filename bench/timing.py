"""The timing helper the benchmarks share (run as scripts: ``python bench/NAME.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_s(fn: Callable[[], None], repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``fn``, in seconds (``time.perf_counter``)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
