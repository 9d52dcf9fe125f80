"""JSON numbers in their dtype's digits, for the ``--print`` artefacts (docs/design/0004, "one
rule for printing values"): the protocol carries a float32 (or float16, bfloat16) value as the
float64 it widens to (``0.33166807889938354``); a printed artefact writes the shortest decimal
that rounds back to the same value *in its own dtype* (``0.33166808``, as numpy's and JAX's repr
of the scalar), still a JSON number that parses back to it. Non-numbers (``"nan"``, ``null``,
lists) pass through; float64 and integer dtypes are left as they are."""

from __future__ import annotations

from typing import Any

import ml_dtypes  # noqa: F401  (registers bfloat16 and the float8s with numpy)
import numpy as np


def shortest(x: float, dtype: str) -> float:
    """``x`` as the float whose repr is the shortest decimal that rounds back to ``x`` in
    ``dtype`` (``x`` itself for float64, integers and unknown dtypes)."""
    try:
        t = np.dtype(dtype)
    except TypeError:
        return x
    if t == np.float64 or t.kind not in "fV" or not np.isfinite(x):
        return x
    target = t.type(x)
    for digits in range(1, 18):
        y = float(f"{x:.{digits}g}")
        if t.type(y) == target:
            return y
    return x


def in_dtype(value: Any, dtype: str) -> Any:
    """Nested lists of numbers with every float through :func:`shortest`."""
    if isinstance(value, list):
        return [in_dtype(v, dtype) for v in value]
    if isinstance(value, float):
        return shortest(value, dtype)
    return value
