"""The example pickers offer the real programs of ``examples/real`` (issue 14, item 4: "ship
them as examples") in the exhibits that run real models; their sources come with the catalogue
under ``real/<name>``, byte for byte the files; where the folder is absent (an installed
package) no exhibit offers any. flax_params offers the two Flax programs (issue 31, item 3: they
define ``model`` and ``model_args`` for it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jaxscope.server.catalogue import build_catalogue

from exhibits import registry

REAL = Path(__file__).resolve().parents[2] / "examples" / "real"
# The exhibits issue 14 names for real programs (caches needs a preset to observe anything).
OFFERING = {
    "tracing",
    "stations",
    "jvp",
    "partial_eval",
    "transpose",
    "nan_finder",
    "vmap",
    "transform_order",
    "pytree",
}


def test_the_pickers_offer_every_real_program_with_its_file_text() -> None:
    files = sorted(REAL.glob("*.py"))
    assert {p.stem for p in files} >= {
        "gpt_stack",
        "nnx_adam_step",
        "cnn32",
        "scan_rnn_step",
        "loop_20k",
    }
    catalogue = build_catalogue()
    for info in catalogue.exhibits:
        if info.id in OFFERING:
            assert info.real_programs == [p.stem for p in files], info.id
        elif info.id == "flax_params":  # the Flax programs only (issue 31, item 3)
            assert info.real_programs == ["linen_adam_step", "nnx_adam_step"]
        else:
            assert info.real_programs == [], info.id
            assert "real_programs" not in json.loads(info.model_dump_json())
    for path in files:
        assert catalogue.examples[f"real/{path.stem}"] == path.read_text(encoding="utf-8")
    # `real/<name>` cannot be an exhibit's own example key (`<id>/<stem>`): no exhibit is "real".
    assert "real" not in registry.EXHIBITS


def test_without_the_folder_no_exhibit_offers_real_programs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(registry, "REAL_PROGRAMS_DIR", tmp_path / "absent")
    catalogue = build_catalogue()
    assert all(info.real_programs == [] for info in catalogue.exhibits)
    assert not any(k.startswith("real/") for k in catalogue.examples)
