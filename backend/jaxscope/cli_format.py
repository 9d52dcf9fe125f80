"""``jaxscope run ID FILE --print ARTEFACT --format json|text``: one artefact in the form asked for
(design 0035).

An artefact (``exhibits/<id>/artefacts.py``, ``exhibits/registry.py``) is a string: either JSON
(``cost``, ``memory``, the caches exhibit's ``layers``...) or text (a jaxpr, StableHLO, a table).
A *JSON artefact* is one whose string parses as a JSON object or array; every other is a *text
artefact*. Without ``--format`` the string is printed as it is (as before the flag existed).

- ``--format json``: a JSON artefact is printed as it is; a text artefact as the object
  ``{"exhibit": ID, "artefact": NAME, "text": TEXT}`` (the text exactly, newlines included).
  The output always parses with ``json.loads``.
- ``--format text``: a text artefact is printed as it is; a JSON artefact as readable text
  (:func:`readable`): an object one ``key: value`` line per key (nested values indented under
  their key), a list of objects as a table (a header of their keys, one row each, columns
  aligned), a list of other values one ``- value`` line each.
"""

from __future__ import annotations

import json
from typing import Any, Literal

Format = Literal["json", "text"]
FORMATS: tuple[Format, ...] = ("json", "text")


def parsed_json(text: str) -> dict[str, Any] | list[Any] | None:
    """The JSON object or array ``text`` holds, or None when it is a text artefact."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict | list) else None


def formatted(exhibit: str, artefact: str, text: str, fmt: Format | None) -> str:
    """The artefact ``artefact`` of ``exhibit`` (its string ``text``) as ``fmt`` asks (None: as
    it is); without a trailing newline (the CLI adds one)."""
    if fmt is None:
        return text
    value = parsed_json(text)
    if fmt == "json":
        if value is not None:
            return text
        return json.dumps({"exhibit": exhibit, "artefact": artefact, "text": text}, indent=2)
    if value is None:
        return text
    return "\n".join(readable(value))


def scalar(value: Any) -> str:
    """One value on one line: a string bare, null/true/false and numbers as JSON writes them, a
    nested list or object as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def readable(value: Any, indent: str = "") -> list[str]:
    """The lines of a JSON value as readable text (see the module docstring)."""
    if isinstance(value, dict):
        if not value:
            return [f"{indent}(empty)"]
        width = max(len(str(k)) for k in value)
        lines: list[str] = []
        for key, item in value.items():
            if _is_scalar(item) or item in ([], {}):
                lines.append(f"{indent}{str(key) + ':':<{width + 1}} {scalar(item)}".rstrip())
            else:
                lines.append(f"{indent}{key}:")
                lines.extend(readable(item, indent + "  "))
        return lines
    if isinstance(value, list):
        if not value:
            return [f"{indent}(empty)"]
        if all(isinstance(v, dict) for v in value):
            return [indent + row for row in table(value)]
        return [f"{indent}- {scalar(v)}" for v in value]
    return [indent + scalar(value)]


def table(records: list[dict[str, Any]]) -> list[str]:
    """A list of JSON objects as an aligned table: a header of their keys (in order of first
    appearance), one row per object (a missing key left blank)."""
    columns: list[str] = []
    for record in records:
        columns.extend(k for k in record if k not in columns)
    cells = [[scalar(r[c]) if c in r else "" for c in columns] for r in records]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]

    def line(parts: list[str]) -> str:
        return "  ".join(p.ljust(w) for p, w in zip(parts, widths, strict=True)).rstrip()

    return [line(columns), *(line(row) for row in cells)]
