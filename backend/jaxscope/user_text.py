"""Text that user code controls, as the events carry it: capped, and read without raising.

The runner, the sandbox's error classification, ``jaxscope.internals`` and the exhibits all put
such text on the wire (what the user's code printed, an exception's message, an exception's
class name), so the caps live here, outside both ``jaxscope.sandbox`` and
``jaxscope.internals`` (which never import each other):

* an exception's message or class name is cut after :data:`MAX_MESSAGE_CHARS` characters
  (:func:`cut_message`, ending in :data:`MESSAGE_CUT_NOTE`): a ``str()`` of a huge array, or a
  class made with ``type("E" * 100_000, ...)``;
* printed output: the runner's ``stdout_printed`` events stop after :data:`PRINT_CAP_BYTES` of
  UTF-8 per run (then :data:`TRUNCATED_NOTE`); the printed text one exhibit event carries (the
  tracing exhibit's ``jit_called.printed``) is cut by :func:`cut_printed` so that its JSON
  stays under :data:`EVENT_PRINT_BYTES` (an ``on_demand`` event line is at most 1 MiB);
* :func:`exception_text` is ``str(exc)``, cut, or, when the exception's ``__str__`` raises, a
  line naming what it raised (:func:`undescribed`), the text the runner's ``run_failed`` gives.
"""

from __future__ import annotations

import json

# An exception message (or class name) longer than this is cut (a str() of a huge array, say).
MAX_MESSAGE_CHARS = 20_000
MESSAGE_CUT_NOTE = "\n… (truncated)"

# The user's printed text: a run prints at most PRINT_CAP_BYTES (UTF-8) as stdout_printed
# events; the rest is dropped after one TRUNCATED_NOTE.
PRINT_CAP_BYTES = 2**20
TRUNCATED_NOTE = "[jaxscope: output truncated after 1 MiB]\n"

# Printed text inside one exhibit event: at most this many bytes as JSON (the same text also
# streamed as stdout_printed events, capped at PRINT_CAP_BYTES).
EVENT_PRINT_BYTES = 256 * 2**10
EVENT_PRINT_NOTE = "[jaxscope: printed output truncated after 256 KiB]\n"


def cut_message(text: str) -> str:
    """``text``, or its first :data:`MAX_MESSAGE_CHARS` characters and :data:`MESSAGE_CUT_NOTE`."""
    if len(text) > MAX_MESSAGE_CHARS:
        return text[:MAX_MESSAGE_CHARS] + MESSAGE_CUT_NOTE
    return text


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 is at most ``max_bytes`` (a character is never
    split; unencodable characters count as ``?``)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return text
    return data[: max(max_bytes, 0)].decode("utf-8", "ignore")


def _json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "replace"))


def cut_printed(text: str, max_bytes: int = EVENT_PRINT_BYTES) -> str:
    """Printed output for one event: ``text`` when its JSON string is at most ``max_bytes``,
    else a prefix whose JSON, with :data:`EVENT_PRINT_NOTE` after it (on a line of its own),
    is (escapes such as ``\\n`` or ``\\u0001`` count as the bytes they take on the wire)."""
    if len(text) <= (max_bytes - 2) // 6 or _json_bytes(text) <= max_bytes:
        return text
    room = max_bytes - _json_bytes("\n" + EVENT_PRINT_NOTE)
    head = utf8_prefix(text, room)
    # Escapes take up to 6 bytes a character: shrink until the JSON fits (a few rounds).
    while (size := _json_bytes(head)) > room:
        head = head[: max(0, len(head) * room // size - 1)]
    return head + (EVENT_PRINT_NOTE if head.endswith("\n") or not head else "\n" + EVENT_PRINT_NOTE)


def undescribed(broken: BaseException) -> str:
    """The message of an exception that could not be described (its ``__str__`` raised
    ``broken``): names only ``broken``'s class, which is read without calling user code."""
    return f"(the exception could not be described: {exception_class(broken)})"


def exception_class(exc: BaseException) -> str:
    """``type(exc).__name__``, cut (:func:`cut_message`)."""
    return cut_message(type(exc).__name__)


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, cut (:func:`cut_message`); :func:`undescribed` when ``str`` raises."""
    try:
        text = str(exc)
    except Exception as broken:  # the user's __str__ raised (or returned no str)
        return undescribed(broken)
    return cut_message(text)
