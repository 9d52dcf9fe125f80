"""Build jaxscope's wheel with the built frontend inside it (``make wheel``; issue 18).

``pip install dist/jaxscope-*.whl`` then ``jaxscope serve`` serves the whole explorer with no
Node and no clone: the frontend (``frontend/dist``, from ``npm run build``) is copied into the
package as ``jaxscope/_frontend`` for the build only, which ``jaxscope.settings`` serves when
there is no checkout around it. Usage: ``python scripts/build_wheel.py [--out DIR]``; prints the
wheel's path. Exits non-zero when ``frontend/dist`` is missing or pip fails.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "frontend" / "dist"
PACKAGED = ROOT / "backend" / "jaxscope" / "_frontend"


def build(out: Path) -> Path:
    """The wheel built into ``out`` (created if needed), the frontend inside it."""
    if not (DIST / "index.html").exists():
        raise SystemExit("frontend/dist is missing: run `npm run build` (make frontend) first")
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("jaxscope-*.whl"))
    shutil.rmtree(PACKAGED, ignore_errors=True)
    shutil.copytree(DIST, PACKAGED)
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
            check=True,
        )
    finally:
        # the copy is the build's only: a checkout serves frontend/dist itself
        shutil.rmtree(PACKAGED, ignore_errors=True)
        shutil.rmtree(ROOT / "build", ignore_errors=True)
    made = sorted(set(out.glob("jaxscope-*.whl")) - before) or sorted(out.glob("jaxscope-*.whl"))
    return made[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    print(build(parser.parse_args().out))


if __name__ == "__main__":
    main()
