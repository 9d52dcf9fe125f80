"""What ``jaxscope serve`` and ``jaxscope watch`` do around uvicorn: bind the port before they say
where they serve, and open the user's browser without putting the token on a command line.

* :func:`bind` binds and listens on every address ``host`` names (as asyncio's ``create_server``,
  which uvicorn uses, would) before anything is printed; uvicorn then serves on these sockets. A
  port already taken (another jaxscope, another program, another user's server) raises
  :class:`CannotListen` with the message the CLI prints: announcing the URL first would send the
  user, and the token the URL carries, to whoever holds the port.
* :func:`redirect_file` writes a page that redirects to the URL (its token included) into a
  private folder (0700, the file 0600), for the CLI to open: a browser started with the URL itself
  would show the token to every local user in ``/proc/PID/cmdline`` for as long as it runs (the
  approach of Jupyter's ``use_redirect_file``; design 0052).
"""

from __future__ import annotations

import errno
import html
import socket
import tempfile
from pathlib import Path


class CannotListen(Exception):
    """The server cannot listen where it was asked to; ``str()`` is the line to print."""


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening sockets on every address of ``host`` at ``port`` (port 0: one port the OS picks,
    the same for all). Raises :class:`CannotListen` naming the port, and ``--port`` when it is
    taken."""
    try:
        infos = socket.getaddrinfo(
            host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise CannotListen(f"jaxscope: cannot listen on {host}: {exc.strerror}") from None
    sockets: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        for family, kind, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:  # the port the first address got
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(2048)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise CannotListen(_why(host, port, exc)) from None
    return sockets


def _why(host: str, port: int, exc: OSError) -> str:
    where = f"port {port} on {host}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"jaxscope: cannot serve: {where} is already in use (by another jaxscope or another "
            "program, perhaps another user's): choose a free one with --port (make serve PORT=N)"
        )
    if exc.errno == errno.EACCES:
        return (
            f"jaxscope: cannot serve: {where} needs privileges this user does not have: "
            "choose a port from 1024 on with --port (make serve PORT=N)"
        )
    return f"jaxscope: cannot serve on {where}: {exc.strerror or exc}"


def bound_port(sockets: list[socket.socket]) -> int:
    """The port the sockets listen on (the one the OS picked for port 0)."""
    port: int = sockets[0].getsockname()[1]
    return port


def redirect_file(url: str) -> Path:
    """A page that sends the browser to ``url``, in a new folder only this user can read (0700,
    the file 0600); the caller removes the folder when the server stops."""
    folder = Path(tempfile.mkdtemp(prefix="jaxscope-open-"))
    page = folder / "open.html"
    quoted = html.escape(url, quote=True)
    page.touch(mode=0o600)
    page.write_text(
        '<!doctype html>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="refresh" content="0;url={quoted}">\n'
        "<title>jaxscope</title>\n"
        f'<p>Opening jaxscope: <a href="{quoted}">continue</a>.</p>\n',
        encoding="utf-8",
    )
    return page
