"""Build jaxscope's wheel with the built frontend inside it (``make wheel``; issue 18).

``pip install dist/jaxscope-*.whl`` then ``jaxscope serve`` serves the whole explorer with no
Node and no clone: the sources are copied into a temporary folder, the frontend
(``frontend/dist``, from ``npm run build``) into that copy's package as ``jaxscope/_frontend``,
which ``jaxscope.settings`` serves when there is no checkout around it.
Usage: ``python scripts/build_wheel.py [--out DIR]``; prints the wheel's path.
Exits non-zero when ``frontend/dist`` is missing or pip fails.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "frontend" / "dist"


def _snapshot(into: Path) -> Path:
    """A copy of what the wheel is built from, the frontend inside it.

    The build never runs in the checkout: ``pip wheel`` rewrites ``jaxscope.egg-info`` and
    ``build/`` there and walks the tree, which raced the test process beside it (CI's
    ``test_wheel`` failed under pytest-xdist); a copied ``_frontend`` in the checkout would
    also be seen by every server started meanwhile.
    """
    src = into / "src"
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules", "*.egg-info")
    for name in ("pyproject.toml", "README.md"):
        src.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    for folder in ("backend", "exhibits"):
        shutil.copytree(ROOT / folder, src / folder, ignore=junk)
    shutil.rmtree(src / "backend" / "jaxscope" / "_frontend", ignore_errors=True)
    shutil.copytree(DIST, src / "backend" / "jaxscope" / "_frontend")
    # The torch venv's pins, for `jaxscope install-torch` (a wheel has no Makefile; design 0057).
    pins = src / "backend" / "jaxscope" / "_torch_requirements"
    pins.mkdir(exist_ok=True)
    for name in ("requirements-torch.txt", "requirements-torchax.txt"):
        shutil.copy2(ROOT / name, pins / name)
    # The real programs (examples/real) the pickers offer, as exhibits/_real (design 0057).
    shutil.copytree(ROOT / "examples" / "real", src / "exhibits" / "_real", ignore=junk)
    return src


def build(out: Path) -> Path:
    """The wheel built into ``out`` (created if needed), the frontend inside it."""
    if not (DIST / "index.html").exists():
        raise SystemExit("frontend/dist is missing: run `npm run build` (make frontend) first")
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("jaxscope-*.whl"))
    with tempfile.TemporaryDirectory(prefix="jaxscope-wheel-") as tmp:
        src = _snapshot(Path(tmp))
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "-w",
                str(out.resolve()),
                str(src),
            ],
            check=True,
        )
    made = sorted(set(out.glob("jaxscope-*.whl")) - before) or sorted(out.glob("jaxscope-*.whl"))
    return made[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    print(build(parser.parse_args().out))


if __name__ == "__main__":
    main()
