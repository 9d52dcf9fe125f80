"""The hosted worker pool: ``jaxscope pool --socket PATH`` serves sessions over a Unix socket.

In docker-compose the pool runs in its own container (no network, non-root, read-only) and the
web tier (``jaxscope serve --pool-socket PATH``) relays each websocket to one connection here.
One connection = one session: NDJSON requests in (``RunRequest``/``CancelRequest``), NDJSON events
out, exactly as on the websocket, with the same limits, death classification and single terminal
event — the supervisor stays next to the processes it kills.

The socket's path is claimed before any worker starts (:func:`claim_socket`): a path that holds
anything but a stale socket (a socket nobody listens on) is refused, never replaced, and the
socket is removed when the pool stops, if the path still holds it (design 0052).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import stat
from pathlib import Path

from exhibits.registry import EXHIBITS
from jaxscope.sandbox.pool import DEFAULT_MAX_WORKERS, WorkerPool
from jaxscope.sandbox.request_loop import serve_requests
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.tenancy import Tenancy
from jaxscope.sandbox.worker import MAX_EVENT_LINE_BYTES
from jaxscope.settings import Limits

log = logging.getLogger(__name__)

# Owner and group (the web tier's user) may connect; nobody else.
SOCKET_MODE = 0o660


class SocketPathTaken(Exception):
    """``--socket PATH`` holds something the pool must not replace; ``str()`` says what."""


def _listened_on(path: Path) -> bool:
    """Whether a process accepts connections on the Unix socket at ``path`` (connection refused:
    a stale socket, left by a pool that died; any other answer, a busy backlog included, counts
    as someone's)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        try:
            probe.connect(str(path))
        except ConnectionRefusedError:
            return False
        except FileNotFoundError:  # it went meanwhile
            return False
        except OSError:
            return True
    return True


def claim_socket(path: Path) -> socket.socket:
    """A Unix socket bound at ``path`` (mode :data:`SOCKET_MODE`), not listening yet, so that
    nobody connects before its mode is set. An existing stale socket at ``path`` is removed
    first; anything else there (a file, a folder, a link, a socket some process listens on)
    raises :class:`SocketPathTaken` and is left as it is."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        for attempt in range(2):
            try:
                sock.bind(str(path))
                break
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE or attempt:
                    raise
            # Something is at the path: replace it only when it is a socket nobody listens on.
            taken = _taken(path)
            if taken is not None:
                raise SocketPathTaken(taken)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        os.chmod(path, SOCKET_MODE)
    except BaseException:
        sock.close()
        raise
    return sock


def _taken(path: Path) -> str | None:
    """Why the existing ``path`` must not be replaced, or None for a stale socket."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if not stat.S_ISSOCK(mode):
        kinds = {stat.S_IFLNK: "a symbolic link", stat.S_IFDIR: "a folder"}
        kind = kinds.get(stat.S_IFMT(mode), "a file")
        return (
            f"{path} exists and is {kind}, not a socket: the pool replaces only a stale socket; "
            "remove it or choose another --socket"
        )
    if _listened_on(path):
        return (
            f"a process is listening on {path} (another jaxscope pool?): stop it or choose "
            "another --socket"
        )
    return None


def _remove_if_ours(path: Path, ours: os.stat_result) -> None:
    """Remove ``path`` if it is still the socket the pool bound (not one put there since)."""
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return
    if (now.st_dev, now.st_ino) == (ours.st_dev, ours.st_ino):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


async def serve_pool(
    path: Path,
    limits: Limits,
    workers: int,
    *,
    started: asyncio.Event | None = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
) -> None:
    """Serve sessions on the Unix socket ``path`` until cancelled; ``started`` is set once the
    socket accepts connections. At most ``max_workers`` workers run at once (see
    :class:`~jaxscope.sandbox.pool.WorkerPool`). The path is claimed first
    (:func:`claim_socket`: raises :class:`SocketPathTaken` before any worker starts) and the
    socket removed when this returns or is cancelled."""
    sock = claim_socket(path)
    ours = os.lstat(path)
    try:
        await _serve_on(sock, path, limits, workers, started, max_workers)
    finally:
        sock.close()
        _remove_if_ours(path, ours)


async def _serve_on(
    sock: socket.socket,
    path: Path,
    limits: Limits,
    workers: int,
    started: asyncio.Event | None,
    max_workers: int,
) -> None:
    pool = WorkerPool(limits, size=workers, max_workers=max_workers)
    # The web tier relays sessions without their client's address: no per-client cap here, but
    # idle sessions still give their workers up when the pool is full (tenancy.py).
    tenancy = Tenancy(None)
    pool.start()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def receive() -> str | None:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, ConnectionError):  # an over-long line, or a reset
                    return None
                if not line:
                    return None
                if line.strip():
                    return line.decode("utf-8", errors="surrogateescape")

        async def send(text: str) -> None:
            writer.write(text.encode() + b"\n")
            await writer.drain()

        try:
            await serve_requests(
                receive, send, Session(pool, EXHIBITS, tenancy=tenancy, report_starts=True)
            )
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    try:
        server = await asyncio.start_unix_server(handle, sock=sock, limit=MAX_EVENT_LINE_BYTES)
        log.info("worker pool serving on %s", path)
        if started is not None:
            started.set()
        async with server:
            await server.serve_forever()
    finally:
        await pool.close()
