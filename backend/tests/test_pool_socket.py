"""``jaxscope pool --socket PATH`` and what is at PATH (issue 31): anything but a stale socket (a
file, a folder, a link, a socket some process listens on) is refused and left as it is; a stale
socket is replaced; the pool's own socket is removed when it stops, by SIGTERM (docker stop) or
Ctrl-C. A real ``jaxscope pool`` in a subprocess, with no warm workers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from jaxscope.cli import EXIT_USAGE
from jaxscope.sandbox.pool_server import SOCKET_MODE

from tests.harness import REPO

JAXSCOPE = str(Path(sys.executable).parent / "jaxscope")

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def folder() -> Iterator[Path]:
    """A short private folder (a Unix socket's path has at most 107 bytes)."""
    with tempfile.TemporaryDirectory(prefix="jxp-") as name:
        yield Path(name)


def start(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [JAXSCOPE, "pool", "--socket", str(path), "--workers", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )


def refused(path: Path) -> str:
    """The pool's stderr; it must exit (2) on its own rather than serve."""
    proc = start(path)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the pool served on {path} instead of refusing it")
    assert proc.returncode == EXIT_USAGE, err
    return err.strip().splitlines()[-1]


def stale_socket(path: Path) -> None:
    """A socket file nobody listens on (a pool killed with SIGKILL leaves one)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(path))


def listens(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("kind", ["file", "folder", "link to a stale socket"])
def test_what_is_not_a_socket_is_refused_and_kept(folder: Path, kind: str) -> None:
    path = folder / "pool.sock"
    if kind == "file":
        path.write_text("precious")
    elif kind == "folder":
        path.mkdir()
    else:
        stale_socket(folder / "other.sock")
        path.symlink_to(folder / "other.sock")
    line = refused(path)
    what = {"file": "a file", "folder": "a folder"}.get(kind, "a symbolic link")
    assert line == (
        f"jaxscope pool: cannot serve: {path} exists and is {what}, not a socket: the pool "
        "replaces only a stale socket; remove it or choose another --socket"
    )
    if kind == "file":
        assert path.read_text() == "precious"
    elif kind == "folder":
        assert path.is_dir()
    else:
        assert path.is_symlink() and (folder / "other.sock").is_socket()


def test_a_socket_someone_listens_on_is_refused_and_kept(folder: Path) -> None:
    path = folder / "pool.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as other:
        other.bind(str(path))
        other.listen()
        line = refused(path)
        assert line == (
            f"jaxscope pool: cannot serve: a process is listening on {path} (another jaxscope "
            "pool?): stop it or choose another --socket"
        )
        assert listens(path)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stale_socket_is_replaced_and_the_pool_removes_its_own(
    folder: Path, stop: signal.Signals
) -> None:
    path = folder / "pool.sock"
    stale_socket(path)
    proc = start(path)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"jaxscope pool serving on {path}"
        assert path.is_socket() and listens(path)
        assert path.stat().st_mode & 0o777 == SOCKET_MODE
        os.kill(proc.pid, stop)  # the pool's process alone, as docker stop does
        proc.wait(timeout=30)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
        assert not os.path.lexists(path)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
