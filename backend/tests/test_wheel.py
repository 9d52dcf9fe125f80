"""``pip install`` of jaxscope's wheel serves the whole explorer with no Node and no clone (issue
18): the wheel is built as ``make wheel`` builds it (``scripts/build_wheel.py``), installed into
a new venv (with the project's pins, ``constraints.txt``), and that venv's ``jaxscope serve``,
started outside any checkout, serves the page and its assets, the catalogue, and runs a snippet
over the websocket in its sandbox: the jaxpr it streams is JAX's own text of the same function.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jaxscope.local_server import serving
from jaxscope.server.frames import frame_objects
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(900)

CODE = (
    "import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x) * 2.0\n\nargs = (jnp.ones(3),)\n"
)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.status == 200
        data: bytes = r.read()
        return data


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``jaxscope`` command of a new venv that has only the wheel (and its dependencies)."""
    if not (ROOT / "frontend" / "dist" / "index.html").exists():
        pytest.fail("frontend/dist is missing: run `npm run build` (make test does)")
    tmp = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, ROOT / "scripts" / "build_wheel.py", "--out", tmp / "dist"],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, f"build_wheel.py failed:\n{built.stdout}\n{built.stderr}"
    wheel = Path(built.stdout.strip().splitlines()[-1])
    names = zipfile.ZipFile(wheel).namelist()
    assert "jaxscope/_frontend/index.html" in names
    assert "exhibits/tracing/narrative.md" in names
    assert "exhibits/_real/gpt_stack.py" in names
    assert "jaxscope/_torch_requirements/requirements-torch.txt" in names
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            venv / "bin" / "python",
            "-m",
            "pip",
            "install",
            "-q",
            # no .pyc written for the ~700 MB of packages (12 of the install's 26 CPU-s here):
            # the server and its worker compile what they import (pip only warns when a file
            # does not compile, so nothing checked is lost)
            "--no-compile",
            "-c",
            ROOT / "constraints.txt",
            wheel,
        ],
        check=True,
        timeout=800,
    )
    return venv / "bin" / "jaxscope"


def test_the_installed_wheel_serves_the_explorer(installed: Path, tmp_path: Path) -> None:
    # started in an empty directory: nothing of the checkout is reachable from there; no torch
    # venv named, the user's data folder empty (design 0057)
    env = {k: v for k, v in os.environ.items() if k != "JAXSCOPE_TORCH_PYTHON"}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    work = tmp_path / "work"
    work.mkdir()
    with serving(cwd=work, exe=installed, timeout_s=120, env=env) as server:
        page = _get(server.url + "/").decode()
        assert '<div id="app">' in page or "<div id=app>" in page or 'id="app"' in page
        for asset in re.findall(r'(?:src|href)="(/assets/[^"]+)"', page):
            assert _get(server.url + asset)
        catalogue = json.loads(_get(server.url + "/api/exhibits"))
        ids = {e["id"] for e in catalogue["exhibits"]}
        assert {"tracing", "stations", "transpose"} <= ids
        # the torch exhibits say so before any run, with the command that installs them from
        # here (there is no Makefile in a wheel), and the pickers offer the real programs
        venv = tmp_path / "data" / "jaxscope" / "venv-torch"
        torch = [e for e in catalogue["exhibits"] if e["worker"] == "torch"]
        assert torch and all(
            "`jaxscope install-torch`" in e["unavailable"]
            and "make torch" not in e["unavailable"]
            and str(venv) in e["unavailable"]
            for e in torch
        )
        real = sorted(p.stem for p in (ROOT / "examples" / "real").glob("*.py"))
        tracing = next(e for e in catalogue["exhibits"] if e["id"] == "tracing")
        assert tracing["real_programs"] == real
        assert all(catalogue["examples"][f"real/{name}"] for name in real)
        ws_url = server.url.replace("http://", "ws://") + "/api/ws"
        with connect(ws_url, open_timeout=30) as ws:
            ws.send(json.dumps({"type": "run", "run_id": "w1", "exhibit": "tracing", "code": CODE}))
            events: list[dict[str, Any]] = []
            while not events or events[-1].get("type") not in ("run_finished", "run_failed"):
                events += frame_objects(ws.recv(timeout=300))  # one event, or an array
    assert events[-1]["type"] == "run_finished", events[-1]
    (staged,) = [e for e in events if e["type"] == "jaxpr_staged"]
    want = str(jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(jnp.ones(3)))
    assert staged["jaxpr"]["text"] == want
    # `jaxscope install-torch` finds the pins the wheel carries and targets that venv
    dry = subprocess.run(
        [installed, "install-torch", "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=60,
    )
    assert dry.returncode == 0, dry.stderr
    assert f"-m venv {venv}" in dry.stdout
    assert "_torch_requirements/requirements-torch.txt" in dry.stdout
