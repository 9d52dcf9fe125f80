"""Defects a read-only review of issue 31's fixes found, each pinned (all failed before):
``--port`` past 65535 wrapped to another port; ``JAXSCOPE_TOKEN=""`` locked everyone out;
``jaxscope pool --socket`` on a path too long or in a missing folder ended in a traceback;
``jaxscope install-torch`` with ``JAXSCOPE_TORCH_PYTHON=/usr/bin/python3`` planned a venv over
``/usr``, and its dry-run printed commands a shell would split."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from jaxscope import cli, torch_install
from jaxscope.server.app import with_token
from jaxscope.settings import Settings


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(port: str) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.main(["serve", "--port", port])
    assert ended.value.code == 2


def test_port_number_takes_0_to_65535() -> None:
    assert [cli.port_number(p) for p in ("0", "8000", "65535")] == [0, 8000, 65535]


def test_an_empty_token_is_replaced_not_used() -> None:
    settings = with_token(Settings(token=""), required=True)
    assert settings.token and len(settings.token) > 20


@pytest.mark.parametrize("where", ["long", "missing_folder"])
def test_pool_on_an_unusable_socket_path_says_why(tmp_path: Path, where: str) -> None:
    path = tmp_path / ("x" * 120 if where == "long" else "absent/pool.sock")
    done = subprocess.run(
        [sys.executable, "-m", "jaxscope.cli", "pool", "--socket", str(path), "--workers", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"cannot serve on {path}" in done.stderr


def test_install_torch_refuses_an_interpreter_of_your_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JAXSCOPE_TORCH_PYTHON", "/usr/bin/python3")
    assert torch_install.install_torch(dry_run=True) == 2
    err = capsys.readouterr().err
    assert "JAXSCOPE_TORCH_PYTHON names /usr/bin/python3" in err
    assert "venv /usr" not in err


def test_install_torch_dry_run_prints_pasteable_commands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("JAXSCOPE_TORCH_PYTHON", raising=False)
    if torch_install.requirements_folder() is None:
        pytest.skip("no torch pins here")
    monkeypatch.setattr(
        torch_install, "torch_python", lambda: Path("/tmp/with space/venv/bin/python")
    )
    assert torch_install.install_torch(dry_run=True) == 0
    lines = [ln[2:] for ln in capsys.readouterr().out.splitlines() if ln.startswith("+ ")]
    assert lines
    check = shlex.split(lines[-1])
    assert check[0] == "/tmp/with space/venv/bin/python"
    assert check[-1].startswith("import torch")
