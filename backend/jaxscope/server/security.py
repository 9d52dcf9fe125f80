"""Access checks of the server: the token (non-loopback binds), the websocket ``Origin`` check
(against cross-site websocket hijacking) and the security headers of every response.

Rules: on a loopback bind without a token nothing is required, except that the ``Host`` must be
a loopback name (DNS rebinding) and a websocket carrying an ``Origin`` must come from the served
origin. When a token is set (always for a non-loopback
bind, and for ``jaxscope watch``, whose page serves the watched file: design 0052), every request
must carry it, as ``?token=`` or in the ``jaxscope_token`` cookie that is set
when a page is opened with ``?token=``; a websocket without ``Origin`` (CLI, bench) is accepted
only on a loopback bind.
"""

from __future__ import annotations

import hmac
import re

from starlette.datastructures import Headers, QueryParams

from jaxscope.settings import Settings, is_loopback

TOKEN_COOKIE = "jaxscope_token"

# A Host header is echoed into the CSP; anything outside host[:port] characters is dropped.
_HOST_RE = re.compile(r"^[A-Za-z0-9.\-]+(:\d+)?$|^\[[0-9A-Fa-f:.]+\](:\d+)?$")


def presented_token(query: QueryParams, headers: Headers) -> str | None:
    """The token a request carries: ``?token=`` first, then the cookie."""
    token = query.get("token")
    if token:
        return token
    cookie = headers.get("cookie", "")
    for part in cookie.split(";"):
        name, _, value = part.strip().partition("=")
        if name == TOKEN_COOKIE and value:
            return value
    return None


def host_ok(settings: Settings, headers: Headers) -> bool:
    """Against DNS rebinding: without a token, a loopback server answers only requests whose
    ``Host`` names a loopback address (``localhost``, ``127.0.0.1``, ``[::1]``, any port). A page
    on ``evil.example`` re-pointed at 127.0.0.1 would otherwise be same-origin with us. With a
    token the token is the defence, and any ``Host`` (a public name, a proxy) is accepted."""
    if settings.token is not None:
        return True
    host = headers.get("host", "")
    if host.startswith("["):
        name = host[1:].partition("]")[0]
    else:
        name = host.rpartition(":")[0] if ":" in host else host
    return is_loopback(name)


def token_ok(settings: Settings, presented: str | None) -> bool:
    """True when no token is required, or ``presented`` equals it (constant-time compare of the
    UTF-8 bytes: ``hmac.compare_digest`` refuses a ``str`` with non-ASCII characters, and a
    presented token is whatever the client sent, lone surrogates included)."""
    if settings.token is None:
        return settings.loopback
    if presented is None:
        return False
    return hmac.compare_digest(
        presented.encode("utf-8", "surrogatepass"), settings.token.encode("utf-8", "surrogatepass")
    )


def served_origin(headers: Headers, scheme: str) -> str | None:
    """The origin this request was served from: ``http(s)://`` + its ``Host`` header."""
    host = headers.get("host")
    if not host or not _HOST_RE.match(host):
        return None
    http_scheme = "https" if scheme in ("https", "wss") else "http"
    return f"{http_scheme}://{host}".lower()


def origin_ok(settings: Settings, headers: Headers, scheme: str) -> bool:
    """The websocket's ``Origin`` equals the served origin; no ``Origin`` only on loopback."""
    origin = headers.get("origin")
    if origin is None:
        return settings.loopback
    expected = served_origin(headers, scheme)
    return expected is not None and origin.lower() == expected


def content_security_policy(headers: Headers, scheme: str) -> str:
    """A strict CSP for the HTML shell; websocket connections only to the served origin."""
    ws = "'self'"
    origin = served_origin(headers, scheme)
    if origin is not None:
        host = origin.split("://", 1)[1]
        ws_scheme = "wss" if origin.startswith("https") else "ws"
        ws = f"'self' {ws_scheme}://{host}"
    return "; ".join(
        [
            "default-src 'self'",
            f"connect-src {ws}",
            "script-src 'self'",
            # Svelte and CodeMirror inject style elements at run time.
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            "worker-src 'self' blob:",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )
