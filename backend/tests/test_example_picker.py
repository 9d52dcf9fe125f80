"""One list of each exhibit's examples (issue 31, item 3): ``Exhibit.picker_paths`` is what the
page's picker offers (the catalogue's ``examples``/``real_programs`` and sources come from it)
and what ``jaxscope run ID NAME`` resolves. A picker entry had no file in its exhibit's folder
(transpose's ``mlp_loss`` lives in tracing's), so ``jaxscope run transpose
exhibits/transpose/examples/mlp_loss.py`` failed with "No such file" and nothing said where it
was; and flax_params offered none of the real Flax programs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from jaxscope.cli import main, snippet_file
from jaxscope.server.catalogue import build_catalogue

from exhibits.registry import (
    EVERY_REAL_PROGRAM,
    EXHIBITS,
    FLAX_REAL_PROGRAMS,
    REAL_PROGRAMS_DIR,
)
from testkit import run_cli
from tests.harness import REPO


def _entries(exhibit_id: str) -> list[str]:
    """The picker's entries as the page gets them (the catalogue's ExhibitInfo)."""
    info = next(i for i in build_catalogue().exhibits if i.id == exhibit_id)
    return info.examples + [f"real/{name}" for name in info.real_programs]


@pytest.mark.parametrize("exhibit_id", sorted(EXHIBITS))
def test_every_picker_entry_is_a_file_the_cli_runs_by_name(exhibit_id: str) -> None:
    exhibit = EXHIBITS[exhibit_id]
    catalogue = build_catalogue()
    entries = _entries(exhibit_id)
    assert exhibit.default_example in entries
    assert sorted(entries) == sorted(exhibit.picker_paths())
    for name in entries:
        found = snippet_file(exhibit, Path(name))
        assert isinstance(found, Path), found
        assert found.is_file() and found.suffix == ".py"
        # the page loads the very text the CLI reads
        key = name if name.startswith("real/") else f"{exhibit_id}/{name}"
        assert catalogue.examples[key] == found.read_text(encoding="utf-8")
        # and the file is found by its own path too, wherever it lives
        assert snippet_file(exhibit, found) == found


def test_a_borrowed_example_asked_for_in_the_wrong_folder_says_where_it_is(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    status = main(["run", "transpose", "exhibits/transpose/examples/mlp_loss.py"])
    err = capsys.readouterr().err
    assert status == 2
    assert "No such file" in err
    assert "exhibits/tracing/examples/mlp_loss.py" in err
    assert "jaxscope run transpose mlp_loss" in err
    status = main(["run", "transpose", "no_such_example"])
    err = capsys.readouterr().err
    assert status == 2 and "offers no example of that name" in err and "mlp_loss" in err


def test_the_cli_runs_a_borrowed_example_by_its_picker_name() -> None:
    """stations offers tracing's mlp_loss: by its picker name the CLI runs tracing's file."""
    path = EXHIBITS["stations"].picker_paths()["mlp_loss"]
    assert path.parent.parent.name == "tracing"

    def run(file: str) -> subprocess.CompletedProcess[str]:
        return run_cli("run", "stations", file, "--print", "jaxpr", cwd=REPO)

    by_name, by_path = run("mlp_loss"), run(str(path))
    assert by_name.returncode == by_path.returncode == 0, by_name.stderr + by_path.stderr
    assert by_name.stdout == by_path.stdout and "dot_general" in by_name.stdout


def test_the_real_programs_are_named_once_and_flax_params_offers_the_flax_ones() -> None:
    assert sorted(EVERY_REAL_PROGRAM) == sorted(p.stem for p in REAL_PROGRAMS_DIR.glob("*.py"))
    assert set(FLAX_REAL_PROGRAMS) <= set(EVERY_REAL_PROGRAM)
    flax = [name for name in _entries("flax_params") if name.startswith("real/")]
    assert flax == [f"real/{name}" for name in sorted(FLAX_REAL_PROGRAMS)]
    for name in FLAX_REAL_PROGRAMS:
        text = (REAL_PROGRAMS_DIR / f"{name}.py").read_text()
        assert "import flax" in text or "from flax" in text
        assert "\nmodel_args = " in text
