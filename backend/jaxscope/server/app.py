"""The FastAPI application: health, the exhibit catalogue, the websocket, the built frontend.

``create_app(settings)`` checks every exhibit has all its parts and that the event union holds
every event the exhibits' ``events.py`` define (fails loudly otherwise), starts
warming the worker pool at startup (so a cold server answers its first trace quickly), enforces
the token and ``Origin`` rules of :mod:`jaxscope.server.security`, and adds a strict
Content-Security-Policy to HTML and ``X-Content-Type-Options: nosniff`` to every response. The
server process never imports JAX: the JAX version comes from the package metadata.

What a server's first run does not need is left off its start (issue 36's cold start): the
catalogue (every exhibit's artefacts module and example files, 120-240 ms CPU) is built on the
first ``GET /api/exhibits``, and the run queue's client (``jaxscope.bus.web``, redis) is imported
only by a server with ``--queue``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import ipaddress
import secrets
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request, Response, WebSocket
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from exhibits.registry import EXHIBITS
from jaxscope.protocol import Catalogue
from jaxscope.sandbox.pool import WorkerPool
from jaxscope.sandbox.session import Session
from jaxscope.sandbox.tenancy import Tenancy
from jaxscope.server.catalogue import build_catalogue, check_exhibits
from jaxscope.server.remote import relay_session
from jaxscope.server.rooms import RoomRegistry
from jaxscope.server.security import (
    TOKEN_COOKIE,
    content_security_policy,
    host_ok,
    origin_ok,
    presented_token,
    token_ok,
)
from jaxscope.server.watch import WatchedFile, watching
from jaxscope.server.ws import serve_session
from jaxscope.settings import Settings

if TYPE_CHECKING:
    from jaxscope.bus.web import Bus

# WebSocket close code "policy violation" (RFC 6455); before accept, uvicorn answers HTTP 403.
POLICY_VIOLATION = 1008

NOT_BUILT_PAGE = """<!doctype html><meta charset="utf-8"><title>jaxscope</title>
<link rel="icon" href="data:,">
<p>jaxscope's backend is running, but the frontend is not built
(<code>frontend/dist</code> is missing). Run <code>make serve</code>, or
<code>npm ci &amp;&amp; npm run build</code>, then reload.</p>
"""


def with_token(settings: Settings, *, required: bool = False) -> Settings:
    """``settings`` with a generated token when none was given and one is needed: the bind is
    not loopback, or ``required`` (a server that serves a watched file: on loopback too, since
    every local user can reach a loopback port, design 0052)."""
    if (required or not settings.loopback) and not settings.token:
        # An empty token (JAXSCOPE_TOKEN="") would lock everyone out, its owner included.
        return dataclasses.replace(settings, token=secrets.token_urlsafe(24))
    return settings


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def client_of(host: str | None) -> str | None:
    """Who a connection counts as for the per-client share of workers: its address, except that
    every loopback address (all of 127.0.0.0/8 and ::1 reach a server bound to 127.0.0.1) is
    one client, ``"loopback"``."""
    if host is None:
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return "loopback"
    except ValueError:
        pass
    return host


def create_app(settings: Settings | None = None, watched: WatchedFile | None = None) -> FastAPI:
    """The jaxscope app for ``settings``; raises ``IncompleteExhibit`` when an exhibit folder
    lacks a part or the event union lacks one of its events (unless ``settings.check_exhibits``
    is false; an inconsistent union also fails importing ``jaxscope.events``, whatever the
    settings). ``app.state.settings`` holds the
    effective settings (with the generated token, if any), ``app.state.pool`` the worker pool
    (unused, never started, when ``settings.pool_socket`` relays sessions to a hosted pool),
    ``app.state.tenancy`` who holds its workers (``sandbox/tenancy.py``), ``app.state.rooms``
    the classroom rooms (``server/rooms.py``; unused under a hosted pool). ``watched``: the file
    ``jaxscope watch`` follows (``server/watch.py``), pushed to the pages that follow it; with
    one, a token is required as on a non-loopback bind (generated when ``settings`` has none)."""
    settings = with_token(settings or Settings(), required=watched is not None)
    if settings.check_exhibits:
        check_exhibits()
    pool = WorkerPool(settings.limits, size=settings.workers, max_workers=settings.max_workers)
    tenancy = Tenancy(settings.per_client)

    remote = settings.pool_socket
    # The run queue (design 0065): runs go to the pool hosts on it; this process runs none.
    bus: Bus | None = None
    if settings.queue:
        from jaxscope.bus.web import Bus

        bus = Bus(settings.queue)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if bus is not None:
            bus.start()
        elif remote is None:
            pool.start()
        try:
            async with watching(watched):
                yield
        finally:
            await pool.close()
            if bus is not None:
                await bus.close()

    app = FastAPI(title="jaxscope", lifespan=lifespan, docs_url=None, redoc_url=None)
    if settings.forwarded_allow_ips:
        # Opt-in: behind a load balancer every socket's peer is the balancer (one client for
        # the per-client share); only the proxies named here are believed (design 0065).
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)
    app.state.settings = settings
    app.state.pool = pool
    app.state.tenancy = tenancy
    app.state.bus = bus
    rooms = RoomRegistry(EXHIBITS)
    app.state.rooms = rooms
    hosted_pool = remote is not None or bus is not None
    made: list[Catalogue] = []
    making = threading.Lock()

    def catalogue() -> Catalogue:
        with making:  # requests that come meanwhile wait for the same build
            if not made:
                made.append(build_catalogue(hosted_pool=hosted_pool))
            return made[0]

    dist: Path = settings.frontend_dist
    built = (dist / "index.html").is_file()

    @app.middleware("http")
    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        presented = presented_token(request.query_params, request.headers)
        if not host_ok(settings, request.headers):
            response: Response = JSONResponse(
                {"detail": "this server answers only to localhost / 127.0.0.1"},
                status_code=403,
            )
        elif not token_ok(settings, presented):
            response = JSONResponse(
                {"detail": "a valid token is required: open the URL jaxscope printed at start"},
                status_code=401,
            )
        else:
            response = await call_next(request)
            if settings.token is not None and request.query_params.get("token"):
                response.set_cookie(TOKEN_COOKIE, settings.token, httponly=True, samesite="strict")
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        if response.headers.get("content-type", "").startswith("text/html"):
            response.headers["Content-Security-Policy"] = content_security_policy(
                request.headers, request.url.scheme
            )
        return response

    # No response model (``response_model=None``) on these two routes: fastapi's model for a return
    # annotation asks whether it is a pydantic v1 model, which imports ``pydantic.v1`` (~20 ms
    # of the server's start, before it listens: issue 36's cold start, design 0079); a dict and
    # a pydantic model are serialised the same way without one (``jsonable_encoder``).
    @app.get("/api/health", response_model=None)
    async def health() -> dict[str, Any]:
        """Liveness, versions (from package metadata: no JAX import here) and pool state."""
        if bus is not None:
            where: dict[str, Any] = await bus.health()
        else:
            where = pool.state() if remote is None else {"socket": str(remote)}
        return {
            "status": "ok",
            "jax_version": _version("jax"),
            "jaxlib_version": _version("jaxlib"),
            "jaxscope_version": _version("jaxscope"),
            "pool": where,
            "limits": dataclasses.asdict(settings.limits),
            "exhibits": list(EXHIBITS),
            "frontend_built": built,
        }

    @app.get("/api/exhibits", response_model=None)
    async def exhibits() -> Catalogue:
        """The catalogue, built on the first request (in a thread: it imports modules and reads
        files) and kept."""
        return made[0] if made else await asyncio.to_thread(catalogue)

    @app.websocket("/api/ws")
    async def ws(websocket: WebSocket) -> None:
        presented = presented_token(websocket.query_params, websocket.headers)
        if (
            not host_ok(settings, websocket.headers)
            or not token_ok(settings, presented)
            or not origin_ok(settings, websocket.headers, websocket.url.scheme)
        ):
            await websocket.close(code=POLICY_VIOLATION)
            return
        await websocket.accept()
        if bus is not None:
            from jaxscope.bus.web import bus_session

            await bus_session(
                websocket, bus, client_of(websocket.client.host if websocket.client else None)
            )
        elif remote is None:
            owner = client_of(websocket.client.host if websocket.client is not None else None)
            session = Session(pool, EXHIBITS, tenancy=tenancy, owner=owner, report_starts=True)
            await serve_session(websocket, session, watched, rooms, owner)
        else:
            await relay_session(websocket, remote)

    if built:

        @app.get("/", include_in_schema=False)
        async def index() -> FileResponse:
            return FileResponse(dist / "index.html", media_type="text/html")

        app.mount("/", StaticFiles(directory=dist, html=True), name="frontend")
    else:

        @app.get("/", include_in_schema=False)
        async def not_built() -> HTMLResponse:
            return HTMLResponse(NOT_BUILT_PAGE)

    return app
