"""The hosted worker pool: ``jaxscope pool --socket PATH`` serves sessions over a Unix socket.

In docker-compose the pool runs in its own container (no network, non-root, read-only) and the
web tier (``jaxscope serve --pool-socket PATH``) relays each websocket to one connection here.
One connection = one session: NDJSON requests in (``RunRequest``/``CancelRequest``), NDJSON events
out, exactly as on the websocket, with the same limits, death classification and single terminal
event — the supervisor stays next to the processes it kills.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
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
    :class:`~jaxscope.sandbox.pool.WorkerPool`)."""
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
            await serve_requests(receive, send, Session(pool, EXHIBITS, tenancy=tenancy))
        except ConnectionError:
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server = await asyncio.start_unix_server(handle, path, limit=MAX_EVENT_LINE_BYTES)
    os.chmod(path, SOCKET_MODE)
    log.info("worker pool serving on %s", path)
    if started is not None:
        started.set()
    try:
        async with server:
            await server.serve_forever()
    finally:
        await pool.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
