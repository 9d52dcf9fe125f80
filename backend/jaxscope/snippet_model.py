"""What a loaded user snippet is: the file name it is compiled under, its lines as Python numbers
them, and :class:`Snippet` (its namespace once executed).

Both sides of the worker use these: the sandbox loads a snippet and hands it to a probe
(``sandbox/snippet.py``, ``sandbox/probe_api.py``, which re-exports them for probes), and
``jaxscope.internals`` recognises the snippet's lines in JAX's source_info and tracebacks by
:data:`SNIPPET_FILENAME`. They live here, outside both packages, so that neither imports the
other (``backend/tests/test_import_rules.py``). No JAX import.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# The file name under which a snippet is compiled: every source_info, traceback frame and debug
# location that points at this name is a line of the user's snippet.
SNIPPET_FILENAME = "<snippet>"

# Where Python's tokenizer ends a line: ``\r\n``, ``\r`` or ``\n``, and nothing else.
_LINE_END = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def source_lines(source: str) -> list[str]:
    """``source``'s lines (with their ends) as Python numbers them: split at ``\n``, ``\r\n``
    and ``\r`` only. Not ``str.splitlines()``, which also splits at characters that are no
    line end to Python (form feed, ``\v``, ``\x1c``-``\x1e``, ``\x85``, U+2028, U+2029), so
    that a line number from a traceback would quote the wrong line."""
    return [line for line in _LINE_END.split(source) if line]


@dataclass
class Snippet:
    """A loaded user snippet (the module's namespace after ``exec``).

    ``f`` and ``args`` are required; ``kwargs``, ``static_argnums``, ``static_argnames`` are
    optional in the snippet (defaults: ``{}``, ``()``, ``()``); ``defines_f`` is False when an
    exhibit that needs no snippet got code without them. ``filename`` is the name the source
    was compiled under (:data:`SNIPPET_FILENAME`), ``source`` its text.
    """

    source: str
    filename: str
    namespace: dict[str, Any]
    f: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()
    # False for an exhibit that needs no snippet (``Exhibit.needs_snippet=False``) when the
    # code defines no ``f``/``args``: ``f`` then raises if called and ``args`` is empty.
    defines_f: bool = True
