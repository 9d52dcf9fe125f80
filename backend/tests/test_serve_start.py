"""What ``jaxscope serve`` does before it serves (issue 36's cold start): the CLI starts the JAX
template before it imports pydantic, the protocol, the event union or asyncio (~25 ms; design
0079), and the app leaves the catalogue and the run queue's client off its start. The first two
run in a fresh interpreter, where ``sys.modules`` holds only what that start imported. ``jaxscope
run`` of a JAX exhibit starts the template before its parser's imports too, and forks from it."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from jaxscope.cli import _prestart_template, build_parser
from jaxscope.sandbox import forked
from jaxscope.sandbox.env import worker_env
from jaxscope.server.catalogue import build_catalogue
from jaxscope.settings import settings_from_env

from exhibits.registry import EXHIBITS
from testkit import fresh_json

# What starting the template needs: the CLI, serve's parser, the workers' environment.
BEFORE_THE_TEMPLATE = """
import json, sys
from jaxscope.cli import build_parser
from jaxscope.sandbox.env import worker_env
from jaxscope.sandbox.kinds import module_command
from jaxscope.sandbox import forked
ns = build_parser(run_options=False).parse_args(["serve", "--port", "0"])
worker_env(kind="jax"), module_command("jax", "jaxscope.sandbox.zygote")
heavy = (
    "pydantic", "jaxscope.protocol", "jaxscope.events", "fastapi", "exhibits.tracing.events",
    "asyncio",
)
print(json.dumps({"command": ns.command, "imported": [m for m in heavy if m in sys.modules]}))
"""

# A server without --queue, created, then asked for its catalogue.
APP_START = """
import json, sys
from fastapi.testclient import TestClient
from jaxscope.server.app import create_app
from jaxscope.settings import settings_from_env
app = create_app(settings_from_env())
left = ("redis", "jaxscope.bus.web", "exhibits.tracing.artefacts", "pydantic.v1")
started = [m for m in left if m in sys.modules]
client = TestClient(app, base_url="http://127.0.0.1")
health = client.get("/api/health")
answer = client.get("/api/exhibits")
print(json.dumps({
    "at_start": started, "status": answer.status_code, "catalogue": answer.json(),
    "health": health.json(), "v1": "pydantic.v1" in sys.modules,
}))
"""


def test_serve_starts_its_template_before_importing_pydantic_or_the_protocol() -> None:
    out = fresh_json(BEFORE_THE_TEMPLATE)
    assert out == {"command": "serve", "imported": []}


def test_the_app_builds_its_catalogue_on_the_first_request_and_imports_no_queue_client() -> None:
    out = fresh_json(APP_START)
    assert out["at_start"] == []
    assert out["status"] == 200
    # The same catalogue as one built directly (the registry, its artefacts and example files).
    assert out["catalogue"] == build_catalogue().model_dump(mode="json")
    tracing = next(e for e in out["catalogue"]["exhibits"] if e["id"] == "tracing")
    assert "jaxpr" in tracing["artefacts"]
    # Served without fastapi's response models, which import pydantic.v1 (~20 ms of the start).
    assert out["health"]["status"] == "ok" and out["health"]["exhibits"] == list(EXHIBITS)
    assert out["v1"] is False


@pytest.mark.parametrize(
    ("variable", "value"),
    [("JAXSCOPE_POOL_SOCKET", "/run/jaxscope/pool.sock"), ("JAXSCOPE_QUEUE", "redis://q:6379/0")],
)
def test_serve_starts_no_template_when_its_workers_run_elsewhere(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    """A server that relays to a pool or puts runs on a queue (given by its variable, as the
    hosted images do, or by the flag) starts no template; one that runs its own workers asks
    for the JAX workers' template, with their environment, where forking is possible here."""
    asked: list[dict[str, str]] = []

    def template_for(env: dict[str, str]) -> None:
        asked.append(env)

    monkeypatch.setattr(forked, "template_for", template_for)
    for name in ("JAXSCOPE_POOL_SOCKET", "JAXSCOPE_QUEUE"):
        monkeypatch.delenv(name, raising=False)
    flag = "--pool-socket" if variable == "JAXSCOPE_POOL_SOCKET" else "--queue"
    cases: list[tuple[list[str], dict[str, str]]] = [
        (["serve"], {variable: value}),
        (["serve", flag, value], {}),
        (["serve"], {}),
    ]
    for argv, env in cases:
        for name, setting in env.items():
            monkeypatch.setenv(name, setting)
        ns = build_parser(run_options=False).parse_args(argv)
        _prestart_template(ns)
        for thread in threading.enumerate():
            if thread.name == "jaxscope-template-prestart":
                thread.join(timeout=10)
        for name in env:
            monkeypatch.delenv(name)
    limits = settings_from_env(workers=0).limits
    forks = forked.zygote_problem("jax", limits) is None
    assert asked == ([worker_env(kind="jax")] if forks else [])


@pytest.mark.parametrize(
    ("argv", "starts"),
    [
        (["tracing", "SNIPPET"], True),
        (["transpose", "SNIPPET", "--json", "--timeout", "9"], True),
        (["tracing", "-"], True),  # stdin
        (["tracing", "mlp_loss"], True),  # an example of its picker, by name
        (["lazy_tensor", "SNIPPET"], False),  # a torch worker's
        (["stations", "SNIPPET"], False),  # an option may route it to the tpu_compile worker
        (["tracing", "SNIPPET", "--device", "cpu"], False),
        (["tracing", "SNIPPET", "--unsafe-no-sandbox"], False),
        (["tracing", "SNIPPET", "--help"], False),  # ends at once: no wait for a template
        (["tracing", "-h"], False),
        (["tracing", "no_such_file.py"], False),
        (["tracing"], False),
        (["--json", "tracing", "SNIPPET"], False),  # not read past a flag: the pool starts it
        (["no_such_exhibit", "SNIPPET"], False),
        ([], False),
    ],
)
def test_run_starts_the_jax_template_before_parsing_only_for_a_jax_exhibit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str], starts: bool
) -> None:
    """``jaxscope run EXHIBIT`` asks for the JAX template before its parser imports pydantic and
    the protocol (``cli._prestart_for_run``) when the exhibit surely runs in a JAX worker, with
    the workers' environment; never for another kind or a flag that changes it."""
    from jaxscope.cli import _prestart_for_run

    asked: list[dict[str, str]] = []
    monkeypatch.setattr(forked, "template_for", lambda env: asked.append(env))
    for name in ("JAXSCOPE_POOL_SOCKET", "JAXSCOPE_QUEUE"):
        monkeypatch.delenv(name, raising=False)
    snippet = tmp_path / "f.py"
    snippet.write_text("def f(x):\n    return x\n\nargs = (1.0,)\n")
    _prestart_for_run([str(snippet) if a == "SNIPPET" else a for a in argv])
    for thread in threading.enumerate():
        if thread.name == "jaxscope-template-prestart":
            thread.join(timeout=10)
    forks = forked.zygote_problem("jax", settings_from_env(workers=0).limits) is None
    assert asked == ([worker_env(kind="jax")] if starts and forks else [])


# A CLI run in a fresh interpreter: how many templates it started (the prestarted one must be the
# one its pool forks from, not a second).
ONE_TEMPLATE = """
import json, sys
from jaxscope import cli
from jaxscope.sandbox import forked
status = cli.main(["run", "tracing", sys.argv[1]])
print(json.dumps({"status": status, "templates": len(forked._templates)}))
"""


def test_a_cli_run_forks_from_the_template_it_prestarted(tmp_path: Path) -> None:
    if forked.zygote_problem("jax", settings_from_env(workers=0).limits) is not None:
        pytest.skip("no forked workers here")
    snippet = tmp_path / "f.py"
    snippet.write_text(
        "import jax.numpy as jnp\n\ndef f(x):\n    return x * 2\n\nargs = (jnp.ones(2),)\n"
    )
    result = fresh_json(ONE_TEMPLATE, str(snippet))
    assert result == {"status": 0, "templates": 1}


# A CLI run, then an exit slowed by an atexit handler that runs before close_templates: the
# launcher thread ends first and bwrap's parent-death signal kills the template (status -9).
SLOW_EXIT = """
import atexit, sys, time
from jaxscope import cli
status = cli.main(["run", "tracing", sys.argv[1]])
atexit.register(time.sleep, 1.0)
sys.exit(status)
"""


def test_a_cli_run_exits_without_a_warning_about_its_template(tmp_path: Path) -> None:
    """The template killed at the CLI's exit is an expected end (``Template._read``): no
    "worker template N ended (status -9)" warning on the user's terminal."""
    if forked.zygote_problem("jax", settings_from_env(workers=0).limits) is not None:
        pytest.skip("no forked workers here")
    snippet = tmp_path / "f.py"
    snippet.write_text(
        "import jax.numpy as jnp\n\ndef f(x):\n    return x * 2\n\nargs = (jnp.ones(2),)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", SLOW_EXIT, str(snippet)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "worker template" not in proc.stderr, proc.stderr[-3000:]
