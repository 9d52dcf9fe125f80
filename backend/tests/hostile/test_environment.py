"""Hostile inputs (issue 12): the server's environment.

The server's environment holds secrets (a DSN with a password, tokens, keys) and variables
that would change how a worker's Python or loader starts (``LD_PRELOAD``, ``PYTHONPATH``). A
worker gets its environment by allowlist (``PATH``, locale, ``TZ``, ``JAX_*``/``XLA_*`` minus
secret-looking names), so a snippet finds none of them: not in ``os.environ``, not in
``/proc/self/environ``, not in any ``environ`` or ``cmdline`` it can read under its ``/proc``,
and not in any event of the run. The harness here is made after the variables are set (the
pool reads the environment when it spawns each worker)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from jaxscope.settings import Limits

from tests.harness import SandboxHarness
from tests.hostile.hostile_kit import OK_TAIL, assert_nothing_left, run

SECRETS = {
    "DATABASE_URL": "postgres://u:pw-hostile-1@h/db",
    "GITHUB_PAT": "ghp_hostile2",
    "SOME_AUTH": "hostile-auth-3",
    "SERVICE_PEM": "-----BEGIN PRIVATE KEY-----hostile4",
    "JAXSCOPE_TOKEN": "hostile-token-5",
    "AWS_SECRET_ACCESS_KEY": "hostile-aws-6",
    "MY_API_KEY": "hostile-api-7",
    "JAX_API_TOKEN": "hostile-jax-token-8",
    "XLA_SECRET": "hostile-xla-secret-9",
    "JAX_SERVICE_KEY": "hostile-jax-key-10",
    "XLA_DB_PASSWORD": "hostile-xla-password-11",
    "JAX_GH_PAT": "hostile-jax-pat-12",
    "SSH_AUTH_SOCK": "/tmp/hostile-ssh-agent-13.sock",
    "GOOGLE_APPLICATION_CREDENTIALS": "/root/hostile-gcp-14.json",
    "HTTPS_PROXY": "http://user:hostile-proxy-15@proxy:3128",
    "SENTRY_DSN": "https://hostile16@sentry.example/1",
    # Would change how the worker starts, were they passed.
    "LD_PRELOAD": "/tmp/hostile-preload-17.so",
    "PYTHONPATH": "/tmp/hostile-pythonpath-18",
}
# Allowlisted and not secret-looking: shows that the workers were spawned with these set.
PLAIN = ("JAX_HOSTILE_PLAIN", "visible-19")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxHarness]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in (*SECRETS.items(), PLAIN):
            patch.setenv(name, value)
        harness = SandboxHarness(Limits(wall_s=10.0, cpu_s=10.0), size=2)
        yield harness
        harness.close()


# Prints (one JSON line): whether NAME is in os.environ, and every place under the worker's
# /proc (its own and its namespace's environ and cmdline files) where VALUE shows up.
LOOK = """import json, os, sys
found = []
for pid in [p for p in os.listdir('/proc') if p.isdigit()] + ['self', 'thread-self']:
    for part in ('environ', 'cmdline'):
        try:
            data = open(f'/proc/{pid}/{part}', 'rb').read()
        except OSError:
            continue
        if VALUE.encode() in data:
            found.append(f'{pid}/{part}')
in_environ = NAME in os.environ or any(VALUE in v for v in os.environ.values())
print(json.dumps({'in_environ': in_environ, 'found': found, 'path': sys.path}))
"""


@pytest.mark.parametrize("name", list(SECRETS))
def test_server_secrets_do_not_reach_the_snippet(sandbox: SandboxHarness, name: str) -> None:
    value = SECRETS[name]
    code = f"NAME = {name!r}\nVALUE = {value!r}\n" + LOOK + OK_TAIL
    outcome = run(sandbox, code)
    outcome.finished()
    seen = json.loads(outcome.printed)
    assert seen["in_environ"] is False
    assert seen["found"] == []
    assert "/tmp/hostile-pythonpath-18" not in seen["path"]
    # Nor does any event of the run carry it (run_started names the backend, the devices...).
    for event in outcome.events:
        assert value not in event.model_dump_json()
    assert_nothing_left(outcome)


def test_allowlisted_variables_do_reach_it(sandbox: SandboxHarness) -> None:
    """The control: JAX_* settings pass (so the secrets above were set when workers spawned),
    HOME and the cwd are the private /tmp."""
    code = (
        "import os\n"
        f"print(os.environ.get({PLAIN[0]!r}), os.environ['HOME'], os.environ['TMPDIR'],"
        " os.getcwd())\n" + OK_TAIL
    )
    outcome = run(sandbox, code)
    outcome.finished()
    assert outcome.printed == f"{PLAIN[1]} /tmp /tmp /tmp\n"
    assert_nothing_left(outcome)
