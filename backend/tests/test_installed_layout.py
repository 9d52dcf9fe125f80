"""An installed jaxscope (the wheel: no checkout around ``exhibits``) says before any run that the
torch exhibits are not installed, with a command that works there (``jaxscope install-torch``,
not ``make torch``, and no path inside site-packages), and its pickers offer the real programs
the wheel carries as ``exhibits/_real`` (issue 31; design 0057). The built wheel itself:
``test_wheel.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from jaxscope import torch_install
from jaxscope.cli import main
from jaxscope.sandbox import kinds
from jaxscope.server.catalogue import build_catalogue

from exhibits import registry

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The layout of an installed package: no Makefile beside ``exhibits``, no torch venv named;
    returns the user's data folder (``XDG_DATA_HOME``)."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(kinds, "CHECKOUT_ROOT", site)
    monkeypatch.delenv(kinds.TORCH_PYTHON_ENV, raising=False)
    data = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    return data


def test_installed_catalogue_says_torch_is_missing_with_a_command_that_works(
    installed: Path,
) -> None:
    catalogue = build_catalogue()
    torch = [e for e in catalogue.exhibits if e.worker == "torch"]
    assert torch and all(e.unavailable is None for e in catalogue.exhibits if e.worker == "jax")
    for info in torch:
        text = info.unavailable
        assert text is not None and "not installed" in text
        assert "`jaxscope install-torch`" in text and "make torch" not in text
        assert str(installed / "jaxscope" / "venv-torch") in text
        assert "site-packages" not in text
    assert kinds.torch_python() == installed / "jaxscope" / "venv-torch" / "bin" / "python"


def test_a_checkout_still_says_make_torch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(kinds.TORCH_PYTHON_ENV, str(tmp_path / "nowhere" / "bin" / "python"))
    assert kinds.in_checkout()
    problem = kinds.kind_problem("torch")
    assert problem is not None and "`make torch`" in problem and "install-torch" not in problem
    monkeypatch.delenv(kinds.TORCH_PYTHON_ENV)
    assert kinds.torch_python() == ROOT / ".venv-torch" / "bin" / "python"


def test_install_torch_runs_the_make_torch_recipe_into_that_venv(
    installed: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the wheel's copy of the pins (scripts/build_wheel.py puts them there)
    pins = tmp_path / "pins"
    pins.mkdir()
    for name in torch_install.REQUIREMENT_FILES:
        shutil.copy2(ROOT / name, pins / name)
    monkeypatch.setattr(torch_install, "PACKAGED", pins)
    assert main(["install-torch", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    venv = installed / "jaxscope" / "venv-torch"
    py = f"{venv}/bin/python"
    assert lines[0].endswith(f"-m venv {venv}")
    assert lines[1] == f"+ {py} -m pip install --no-deps -r {pins}/requirements-torch.txt"
    assert lines[2] == (
        f"+ {py} -m pip install --no-deps --upgrade --target {venv}/torchax-site "
        f"-r {pins}/requirements-torchax.txt"
    )
    # shell-quoted, so that it can be pasted
    assert lines[3] == f"+ {py} -c 'import torch, torch_xla, pydantic, ml_dtypes'"
    assert not venv.exists()  # a dry run makes nothing


def test_the_packaged_real_programs_fill_the_pickers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    packaged = tmp_path / "exhibits" / "_real"
    shutil.copytree(ROOT / "examples" / "real", packaged)
    monkeypatch.setattr(registry, "REAL_PROGRAMS_DIR", tmp_path / "absent")
    monkeypatch.setattr(registry, "PACKAGED_REAL_PROGRAMS_DIR", packaged)
    catalogue = build_catalogue()
    tracing = next(e for e in catalogue.exhibits if e.id == "tracing")
    assert tracing.real_programs == sorted(registry.EVERY_REAL_PROGRAM)
    for name in registry.EVERY_REAL_PROGRAM:
        assert catalogue.examples[f"real/{name}"] == (packaged / f"{name}.py").read_text()
