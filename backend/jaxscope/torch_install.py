"""``jaxscope install-torch``: make the PyTorch/XLA track's venv where this jaxscope looks for it
(design 0057), the steps of the Makefile's ``make torch`` recipe for a package installed from the
wheel, which has no Makefile.

The pins are the checkout's ``requirements-torch.txt`` and ``requirements-torchax.txt``;
``scripts/build_wheel.py`` copies both into the package as ``jaxscope/_torch_requirements/``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from jaxscope.sandbox.kinds import CHECKOUT_ROOT, TORCH_PYTHON_ENV, torch_python

REQUIREMENT_FILES = ("requirements-torch.txt", "requirements-torchax.txt")
PACKAGED = Path(__file__).resolve().parent / "_torch_requirements"


def requirements_folder() -> Path | None:
    """The folder holding both requirement files: the package's copy (a wheel), else the
    checkout's root; None where neither has them."""
    for folder in (PACKAGED, CHECKOUT_ROOT):
        if all((folder / name).is_file() for name in REQUIREMENT_FILES):
            return folder
    return None


def install_commands(venv: Path, requirements: Path, base_python: str) -> list[list[str]]:
    """The commands that make the torch venv ``venv``: the Makefile's ``$(TORCH_VENV)/.ready``
    recipe (a venv of ``base_python``, the torch pins with ``--no-deps``, torchax and its JAX in
    ``torchax-site``, the import check)."""
    python = str(venv / "bin" / "python")
    commands: list[list[str]] = []
    if not os.access(python, os.X_OK):
        commands.append([base_python, "-m", "venv", str(venv)])
    commands += [
        [
            python,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-r",
            str(requirements / REQUIREMENT_FILES[0]),
        ],
        [
            python,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--upgrade",
            "--target",
            str(venv / "torchax-site"),
            "-r",
            str(requirements / REQUIREMENT_FILES[1]),
        ],
        [python, "-c", "import torch, torch_xla, pydantic, ml_dtypes"],
    ]
    return commands


def install_torch(*, dry_run: bool = False) -> int:
    """Make the torch venv at :func:`jaxscope.sandbox.kinds.torch_python`'s venv; the exit
    status. ``dry_run``: print the commands only."""
    requirements = requirements_folder()
    if requirements is None:
        print("jaxscope install-torch: this jaxscope carries no torch pins", file=sys.stderr)
        return 2
    if os.environ.get(TORCH_PYTHON_ENV):
        # It names an interpreter someone installed: not ours to make or to overwrite.
        print(
            f"jaxscope install-torch: {TORCH_PYTHON_ENV} names {os.environ[TORCH_PYTHON_ENV]}, "
            "an interpreter of your own: install torch and torch_xla there yourself, or unset "
            f"{TORCH_PYTHON_ENV} to let jaxscope make its own venv",
            file=sys.stderr,
        )
        return 2
    venv = torch_python().parent.parent
    if venv.exists() and not (venv / "pyvenv.cfg").exists():
        print(
            f"jaxscope install-torch: {venv} exists and is not a venv: not touching it",
            file=sys.stderr,
        )
        return 2
    commands = install_commands(venv, requirements, sys.executable)
    for command in commands:
        print("+ " + shlex.join(command), flush=True)  # pasteable in a shell
        if dry_run:
            continue
        env = dict(os.environ, PJRT_DEVICE="CPU")
        venv.parent.mkdir(parents=True, exist_ok=True)
        if subprocess.run(command, env=env).returncode != 0:
            print(f"jaxscope install-torch: failed: {shlex.join(command)}", file=sys.stderr)
            return 1
    if not dry_run:
        print(f"the PyTorch/XLA track is installed in {venv}; restart `jaxscope serve`")
    return 0
