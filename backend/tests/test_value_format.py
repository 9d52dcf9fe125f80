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

import ml_dtypes
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
    dtype = np.dtype(ml_dtypes.bfloat16 if case["dtype"] == "bfloat16" else case["dtype"])
    with np.errstate(over="ignore"):
        scalar = np.asarray(_value(case)).astype(dtype)
    # The JSON number is the dtype's value exactly (what the backend sends for it).
    assert float(scalar) == _value(case) or np.isnan(float(scalar))
    text = preview_value(scalar)
    assert text == case["text"]
    # The same digits as the element inside an array (up to the point a lone scalar completes).
    element = preview_value(scalar.reshape(1))[1:-1].strip()
    assert text in (element, element + "0", element.replace(".e", "e"))
    if dtype.kind in "fiub":  # numpy's own dtypes: exactly numpy's array printout
        with np.printoptions(precision=6):
            assert element == np.array2string(scalar.reshape(1), separator=", ")[1:-1].strip()
    if np.isfinite(float(scalar)) and dtype.kind != "b":
        v, shown = float(scalar), float(text)
        exp = int(text.split("e")[1]) if "e" in text else 0
        with np.errstate(over="ignore"):
            round_trips = bool(np.asarray(shown).astype(dtype) == scalar)
        # Digits of the value's own dtype (they round back to it), or the value rounded to 6
        # digits after the point (of the mantissa, in scientific) when more would be needed.
        assert round_trips or abs(shown - v) <= 5.000001e-7 * 10.0**exp


def test_bfloat16_gets_its_own_shortest_digits() -> None:
    """numpy prints bfloat16 through float32 (0.100098); the previews write bfloat16 digits."""
    bf16 = ml_dtypes.bfloat16
    assert preview_value(np.asarray(0.1, bf16)) == "0.1"
    assert preview_value(np.asarray([0.1, 1.5, 2.0, np.nan], bf16)) == "[0.1, 1.5, 2., nan]"
    assert preview_value(np.asarray(1 / 3, bf16)) == "0.334"
    # scientific from 10 ** finfo(bfloat16).precision = 100, as numpy decides for its floats
    assert preview_value(np.asarray(300.0, bf16)) == "3e+02"
    for v in np.random.default_rng(0).standard_normal(200):
        x = np.asarray(v).astype(bf16)
        text = preview_value(x)
        assert np.asarray(float(text)).astype(bf16) == x
        # and no shorter text would do
        digits = len(text.lstrip("-").replace(".", "").strip("0"))
        if digits > 1:
            assert np.asarray(float(f"{float(x):.{digits - 2}e}")).astype(bf16) != x


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
