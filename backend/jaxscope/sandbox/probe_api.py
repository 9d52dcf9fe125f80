"""The interface between the sandbox runner and an exhibit's probe (``exhibits/<id>/probe.py``).

A probe module defines ``def run(ctx: ProbeContext) -> None``. The runner (inside the sandboxed
worker) has already executed the user's snippet and hands the probe a :class:`Snippet`. The probe
calls JAX (through ``jaxscope.internals`` for anything private) and reports every artefact with
``ctx.emit(event)``; it never writes to stdout (the runner captures stdout as the user's prints).

A probe does not catch the user's exceptions: it lets them propagate, and the runner turns them
into one ``run_failed`` event (with the user's line, JAX's error class and a plain explanation).
It does not emit ``run_started``/``run_finished``/``run_failed`` itself either.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from jaxscope.protocol import EventModel, RunOptions, Stage

# The file name under which a snippet is compiled: every source_info, traceback frame and debug
# location that points at this name is a line of the user's snippet.
SNIPPET_FILENAME = "<snippet>"


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


class ProbeContext(Protocol):
    """What the runner gives a probe."""

    run_id: str
    exhibit: str
    options: RunOptions
    snippet: Snippet

    def emit(self, event: EventModel) -> None:
        """Send one event (``seq``/``run_id`` are filled in by the runner/supervisor)."""
        ...

    def stage(self, stage: Stage, call_index: int | None = None) -> AbstractContextManager[None]:
        """Enter a stage: emits ``stage_started``, and attributes the user's stdout written
        inside it to this stage (``stdout_printed.stage``). Exceptions propagate unchanged,
        and the runner reports the stage they escaped from in ``run_failed.stage``."""
        ...
