"""The TensorFlow worker kind's plumbing (design 0066), without starting a worker: where its
interpreter is looked for, what the catalogue says when the venv is missing, its environment and
command, and the Makefile's `tf` target and `TF=no`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from jaxscope.sandbox import kinds
from jaxscope.sandbox.worker import worker_env
from jaxscope.server.catalogue import build_catalogue

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_tf_venv_is_named_with_its_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(kinds.TF_PYTHON_ENV, str(tmp_path / "nowhere" / "bin" / "python"))
    problem = kinds.kind_problem("tf")
    assert problem is not None
    assert "make tf" in problem and str(tmp_path / "nowhere") in problem
    entries = {e.id: e for e in build_catalogue().exhibits}
    assert entries["tf_bridge"].worker == "tf"
    assert entries["tf_bridge"].unavailable == problem
    # the JAX exhibits are unaffected
    assert entries["tracing"].unavailable is None


def test_an_installed_package_looks_in_the_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(kinds.TF_PYTHON_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert kinds.default_tf_venv(tmp_path / "no-checkout") == tmp_path / "jaxscope" / "venv-tf"
    assert kinds.default_tf_venv(ROOT) == ROOT / ".venv-tf"


def test_a_tf_worker_is_a_jax_worker_with_tensorflow_quiet(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env = worker_env({"PATH": "/bin"}, kind="tf")
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert "xla_force_host_platform_device_count=8" in env["XLA_FLAGS"]
    assert "PYTHONPATH" not in env
    python = tmp_path / "venv-tf" / "bin" / "python"
    monkeypatch.setenv(kinds.TF_PYTHON_ENV, str(python))
    command = kinds.runner_command("tf")
    # the TF venv's python, with the finder that sees only jaxscope and exhibits of this side
    assert command[:2] == [str(python), "-c"] and "_JaxscopePackages" in command[2]
    assert kinds.python_of("tf") == str(python)


def test_make_tf_and_tf_no() -> None:
    def dry(*args: str) -> str:
        done = subprocess.run(
            ["make", "-n", "-B", *args], cwd=ROOT, capture_output=True, text=True, check=True
        )
        return done.stdout

    recipe = dry("tf")
    assert "pip install -q --no-deps -r requirements-tf.txt" in recipe
    assert "import tensorflow, tf2jax, jax" in recipe
    assert "requirements-tf.txt" in dry("serve")
    assert "requirements-tf.txt" not in dry("serve", "TF=no")
