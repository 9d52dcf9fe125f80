"""Keep the access token out of the server's log (break-it review, issue 32).

The page carries ``?token=…`` in its URL and in its websocket URL, and uvicorn logs each
request's path with its query string (``"GET /?token=… HTTP/1.1" 200``, ``"WebSocket
/api/ws?token=…" [accepted]``): anyone who reads the log could use the token. This filter
rewrites the token's value to ``***`` in every record of uvicorn's loggers before it is
formatted; the rest of the line stays as uvicorn writes it.
"""

from __future__ import annotations

import logging
import re

_TOKEN = re.compile(r"(token=)[^&\s\"']+")
LOGGERS = ("uvicorn.access", "uvicorn.error")


def redact(text: str) -> str:
    """``text`` with every ``token=VALUE`` query parameter's value replaced by ``***``."""
    return _TOKEN.sub(r"\1***", text)


class RedactToken(logging.Filter):
    """A filter that redacts the token in a record's message and string arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def install() -> None:
    """Add the filter to uvicorn's loggers (after ``uvicorn.Config`` has configured them)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactToken) for f in logger.filters):
            logger.addFilter(RedactToken())
