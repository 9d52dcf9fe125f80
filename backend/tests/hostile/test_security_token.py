"""Tokens that are not ASCII (issue 12, point 6, item 5): refused like any wrong token (401 over
HTTP, close 1008 on the websocket), never an HTTP 500; the right token still works after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from jaxscope.server.app import create_app
from jaxscope.settings import Settings
from starlette.websockets import WebSocketDisconnect

# (query string, headers) carrying a token with characters hmac.compare_digest refuses in a str.
# Header values go as bytes: the client sends them as they are (latin-1 or UTF-8).
PRESENTED: dict[str, tuple[str, dict[bytes, bytes]]] = {
    "query, UTF-8 é": ("?token=%C3%A9", {}),
    "query, snowman and ASCII": ("?token=abc%E2%98%83def", {}),
    "query, UTF-8 of a lone surrogate": ("?token=%ED%A0%80", {}),
    "query, bytes that are not UTF-8": ("?token=%FF%FE", {}),
    "cookie, latin-1 é": ("", {b"cookie": "jaxscope_token=\u00e9".encode("latin-1")}),
    "cookie, UTF-8 bytes": ("", {b"cookie": "jaxscope_token=\u2603".encode()}),
    "authorization header": ("", {b"authorization": "Bearer \u00e9t\u00e9".encode()}),
}


@pytest.fixture(scope="module")
def guarded() -> Iterator[tuple[TestClient, str]]:
    """A non-loopback server (a token is required), and its token."""
    app = create_app(Settings(host="0.0.0.0", workers=0, check_exhibits=False))
    with TestClient(app) as client:
        yield client, app.state.settings.token


@pytest.mark.parametrize("name", list(PRESENTED))
def test_non_ascii_token_is_refused_over_http(guarded: tuple[TestClient, str], name: str) -> None:
    client, token = guarded
    query, headers = PRESENTED[name]
    client.cookies.clear()
    for path in ("/api/health", "/api/exhibits", "/"):
        r = client.get(path + query, headers=headers)
        assert r.status_code == 401, (path, r.status_code, r.text)
        assert "a valid token is required" in r.json()["detail"]
    # The server still serves the right token.
    assert client.get(f"/api/health?token={token}").status_code == 200
    client.cookies.clear()


@pytest.mark.parametrize("name", list(PRESENTED))
def test_non_ascii_token_is_refused_on_the_websocket(
    guarded: tuple[TestClient, str], name: str
) -> None:
    client, token = guarded
    query, headers = PRESENTED[name]
    client.cookies.clear()
    with pytest.raises(WebSocketDisconnect) as info:
        with client.websocket_connect(
            "/api/ws" + query, headers={b"origin": b"http://testserver", **headers}
        ):
            pass
    assert info.value.code == 1008
    with client.websocket_connect(
        f"/api/ws?token={token}", headers={"origin": "http://testserver"}
    ) as ws:
        ws.send_text("{}")
        assert '"invalid_request"' in ws.receive_text()
    client.cookies.clear()


def test_non_ascii_token_on_a_loopback_server_with_a_token() -> None:
    app = create_app(Settings(token="s3cret", workers=0, check_exhibits=False))
    with TestClient(app, base_url="http://localhost:8000") as client:
        assert client.get("/api/health?token=s%C3%A9cret").status_code == 401
        cookie = {b"cookie": "jaxscope_token=\u00e9".encode("latin-1")}
        assert client.get("/api/health", headers=cookie).status_code == 401
        assert client.get("/api/health?token=s3cret").status_code == 200
