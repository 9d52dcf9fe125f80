"""Add cases to ``frontend/src/widgets/format-cases.json``: scalars with the text numpy prints for
them (``jaxscope.internals.views.preview_value``: numpy's array element formatter at
``precision=6``), which ``frontend/src/widgets/format.test.ts`` holds ``formatScalar`` to and
``backend/tests/test_value_format.py`` re-checks against numpy.

The cases already there are kept (they are the record); this adds, once each, the float16 values
a gradient check prints: thirds and other repeating fractions (``0.333251953125`` is ``0.3333``),
subnormals down to the smallest (``6e-08``), values at numpy's switches to scientific (below
``1e-4``, from ``1e3``), the largest finite value, and a seeded sample across every binade.
Run: ``.venv/bin/python scripts/format_cases.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from jaxscope.internals.views import preview_value

CASES = Path(__file__).resolve().parents[1] / "frontend" / "src" / "widgets" / "format-cases.json"


def float16_values() -> list[float]:
    f16 = np.float16
    fractions = [1 / 3, 2 / 3, 1 / 7, 1 / 9, 0.1, 0.2, 100 / 300, 19.0797, 2.9113e-4, -1 / 3]
    tiny = float(np.finfo(f16).smallest_subnormal)
    subnormals = [tiny, 2 * tiny, 3 * tiny, 1e-7, 3.3e-6, 6.0e-5, -tiny]
    edges = [
        9.99e-5,
        1e-4,
        1.0001e-4,
        999.5,
        1000.0,
        1001.0,
        float(np.finfo(f16).max),
        float(np.finfo(f16).smallest_normal),
        0.5 + float(np.finfo(f16).eps) / 2,
        2048.0,
        2049.0,
    ]
    rng = np.random.default_rng(15)
    sample = (rng.choice([-1.0, 1.0], 60) * 2.0 ** rng.uniform(-24, 15.9, 60)).tolist()
    return [float(f16(v)) for v in [*fractions, *subnormals, *edges, *sample]]


def case(dtype: str, value: float) -> dict[str, Any]:
    return {"dtype": dtype, "value": value, "text": preview_value(np.asarray(value, dtype))}


def main() -> None:
    data = json.loads(CASES.read_text())
    seen = {(c["dtype"], json.dumps(c["value"])) for c in data["cases"]}
    added = 0
    for value in float16_values():
        new = case("float16", value)
        key = ("float16", json.dumps(new["value"]))
        if key not in seen:
            seen.add(key)
            data["cases"].append(new)
            added += 1
    CASES.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{added} cases added, {len(data['cases'])} in all")


if __name__ == "__main__":
    main()
