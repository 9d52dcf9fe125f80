"""Scalars are printed like array elements, with the digits of their own dtype.

``preview_value`` (every value preview the exhibits show) and the frontend's ``formatScalar``
(values sent as JSON numbers) follow one rule (docs/design/0004-frontend-shell.md): numpy's
element formatter at ``precision=6``. The shared cases in ``frontend/src/widgets/format-cases.json``
are checked here against numpy and in ``format.test.ts`` against ``formatScalar``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jaxscope.internals.views import preview_value

CASES = Path(__file__).parents[2] / "frontend" / "src" / "widgets" / "format-cases.json"


def _cases() -> list[dict[str, Any]]:
    return list(json.loads(CASES.read_text())["cases"])


def _value(case: dict[str, Any]) -> Any:
    v = case["value"]
    return float(v) if isinstance(v, str) else v  # "nan", "inf", "-inf", "-0.0"


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['dtype']}:{c['value']}")
def test_a_scalar_prints_as_numpy_prints_it_in_an_array(case: dict[str, Any]) -> None:
    dtype = np.dtype(case["dtype"])
    scalar = np.asarray(_value(case)).astype(dtype)
    # The JSON number is the dtype's value exactly (what the backend sends for it).
    assert float(scalar) == _value(case) or np.isnan(float(scalar))
    text = preview_value(scalar)
    assert text == case["text"]
    # The same digits as the element inside an array (up to the point a lone scalar completes).
    with np.printoptions(precision=6):
        element = np.array2string(scalar.reshape(1), separator=", ")[1:-1].strip()
    assert text in (element, element + "0", element.replace(".e", "e"))
    # Never float64 digits for a narrower float: the text rounds back to the same value.
    if dtype.kind == "f" and np.isfinite(scalar) and 1e-4 <= abs(float(scalar)) < 1e8:
        shortest = str(scalar[()])
        assert len(text) <= max(len(shortest), len(element) + 1)


def test_the_findings_of_the_review() -> None:
    """The float32 values the review saw printed with float64 digits."""
    assert preview_value(np.float32(0.1)) == "0.1"
    assert preview_value(np.float32(0.19886744022369385)) == "0.198867"
    assert preview_value(np.asarray([np.float32(0.19886744022369385)])) == "[0.198867]"
    assert preview_value(np.float32(-1.3560506105422974)) == "-1.356051"
    assert preview_value(np.float64(0.1)) == "0.1"
    assert preview_value(np.float32(1.0)) == "1.0"
    assert preview_value(np.int32(-3)) == "-3"
    assert preview_value(np.bool_(True)) == "True"
