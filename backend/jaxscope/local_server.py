"""Run a real ``jaxscope serve`` in a subprocess on a free loopback port.

For the end-to-end tests, the CLI tests and ``bench/latency.py``: each needs the same server a
user starts, on a port nobody else uses, torn down with its workers afterwards. Imports nothing
from JAX.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class Served:
    """A running server: ``url`` (``http://127.0.0.1:PORT``), its process, and
    ``started`` (``time.perf_counter()`` just before the process was spawned)."""

    url: str
    port: int
    proc: subprocess.Popen[bytes]
    started: float


def wait_healthy(
    url: str, proc: subprocess.Popen[bytes], timeout_s: float, log: Path | None = None
) -> None:
    """Poll ``GET /api/health`` until it answers 200. Raises ``RuntimeError`` (with the server's
    ``log`` when given) when the process exits first or ``timeout_s`` seconds pass."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out = log.read_text(errors="replace") if log is not None else ""
            raise RuntimeError(f"jaxscope serve did not come up:\n{out}")
        time.sleep(0.01)


@contextmanager
def serving(
    *extra_args: str,
    cwd: Path | None = None,
    timeout_s: float = 60.0,
    port: int | None = None,
    env: dict[str, str] | None = None,
    exe: Path | None = None,
) -> Iterator[Served]:
    """``jaxscope serve --host 127.0.0.1 --port <port> *extra_args`` (a free port by default;
    ``env``: the server's environment, default this process's; ``exe``: the ``jaxscope``
    command, default this venv's), healthy on entry; on exit its whole process group (server
    and workers) gets SIGTERM, then SIGKILL after 10 s."""
    port = free_port() if port is None else port
    exe = Path(sys.executable).parent / "jaxscope" if exe is None else exe
    # The server's log goes to a file: an unread pipe would fill up and block the server.
    log_file = tempfile.NamedTemporaryFile(prefix="jaxscope-serve-", suffix=".log", delete=False)
    log = Path(log_file.name)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), *extra_args],
        cwd=cwd,
        env=env,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log_file.close()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout_s, log)
        yield Served(url=url, port=port, proc=proc, started=started)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.unlink(missing_ok=True)
