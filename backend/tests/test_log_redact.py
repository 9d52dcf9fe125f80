"""The access token never reaches the server's log: uvicorn's own loggers and formatters, with
the filter jaxscope installs, on the lines uvicorn writes for a page and its websocket."""

from __future__ import annotations

import io
import logging

import uvicorn
from jaxscope.server import log_redact
from uvicorn.logging import AccessFormatter, DefaultFormatter


def _captured(name: str, formatter: logging.Formatter) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    return logger, out


def test_uvicorns_request_and_websocket_lines_lose_the_token() -> None:
    uvicorn.Config(app="x:y")  # configures uvicorn's loggers as `jaxscope serve` does
    log_redact.install()
    access, access_out = _captured("uvicorn.access", AccessFormatter("%(request_line)s"))
    error, error_out = _captured("uvicorn.error", DefaultFormatter("%(message)s"))
    secret = "s3cr3t-T0ken_value"
    try:
        _log_both(access, error, secret)
    finally:
        for logger in (access, error):
            logger.handlers = [
                h
                for h in logger.handlers
                if not isinstance(h, logging.StreamHandler)
                or getattr(h, "stream", None) not in (access_out, error_out)
            ]
    text = access_out.getvalue() + error_out.getvalue()
    assert secret not in text
    assert "GET /?e=jvp&token=*** HTTP/1.1" in text
    assert '"WebSocket /api/ws?token=***&x=1" [accepted]' in text
    log_redact.install()  # twice: still one filter
    assert sum(isinstance(f, log_redact.RedactToken) for f in access.filters) == 1


def _log_both(access: logging.Logger, error: logging.Logger, secret: str) -> None:
    access.info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", f"/?e=jvp&token={secret}", "1.1", 200
    )
    error.info('%s - "WebSocket %s" [accepted]', "127.0.0.1:5", f"/api/ws?token={secret}&x=1")
