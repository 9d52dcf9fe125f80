"""What `make test` runs of the suite, and what only `make test-all` runs (design 0058).

`make test` must fit CI's time (35 min on 2 cores, installs included), so a large parametrized
matrix runs a fixed, seeded sample of its cases and the full-size programs are marked ``full``;
`make test-all` (``JAXSCOPE_TEST_ALL=1``) runs every case. The sample is different per matrix
(its ``key``, usually the exhibit's or test's name) and the same from run to run, so a failure
in a sampled case reproduces.
"""

from __future__ import annotations

import os
import random
import zlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def whole_matrices() -> bool:
    """True when the whole matrix runs: `make test-all` sets ``JAXSCOPE_TEST_ALL=1``."""
    return os.environ.get("JAXSCOPE_TEST_ALL", "") not in ("", "0")


def sample(cases: Sequence[T], k: int, *, key: str) -> list[T]:
    """``k`` of ``cases`` (all of them under `make test-all`), chosen by a seed made from ``key``.

    The order of ``cases`` is kept, so pytest's ids read as before. ``k >= len(cases)`` keeps all.
    """
    if whole_matrices() or k >= len(cases):
        return list(cases)
    rng = random.Random(zlib.crc32(key.encode()))
    chosen = sorted(rng.sample(range(len(cases)), k))
    return [cases[i] for i in chosen]
