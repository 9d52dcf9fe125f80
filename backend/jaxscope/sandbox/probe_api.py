"""The interface between the sandbox runner and an exhibit's probe (``exhibits/<id>/probe.py``).
Probes import it from ``jaxscope.exhibit_api``, the one module of jaxscope they import.

A probe module defines ``def run(ctx: ProbeContext) -> None``. The runner (inside the sandboxed
worker) has already executed the user's snippet and hands the probe a :class:`Snippet`. The probe
calls JAX (through ``jaxscope.internals`` for anything private) and reports every artefact with
``ctx.emit(event)``; it never writes to stdout (the runner captures stdout as the user's prints).

A probe does not catch the user's exceptions: it lets them propagate, and the runner turns them
into one ``run_failed`` event (with the user's line, JAX's error class and a plain explanation).
It does not emit ``run_started``/``run_finished``/``run_failed`` itself either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from jaxscope.protocol import RunOptions, Stage

# What a loaded snippet is lives outside the sandbox (``jaxscope.internals`` reads it too);
# re-exported here, beside the rest of the probe API (probes import it all from
# ``jaxscope.exhibit_api``).
from jaxscope.snippet_model import SNIPPET_FILENAME as SNIPPET_FILENAME
from jaxscope.snippet_model import Snippet as Snippet
from jaxscope.snippet_model import source_lines as source_lines

# Annotations only: the event union (every exhibit's events.py) is not imported in a worker,
# which imports the events of the exhibit it runs (issue 36).
if TYPE_CHECKING:
    from jaxscope.protocol import EventModel


class ProbeContext(Protocol):
    """What the runner gives a probe."""

    run_id: str
    exhibit: str
    options: RunOptions
    snippet: Snippet
    # The run streams summaries to a page that asks for details on demand
    # (``RunRequest.details``): a probe may leave out of its capture what no summary carries
    # (value previews, printed when the page asks: ``jaxscope.internals.previews``).
    on_demand: bool

    def emit(self, event: EventModel) -> None:
        """Send one event (``seq``/``run_id`` are filled in by the runner/supervisor)."""
        ...

    def stage(self, stage: Stage, call_index: int | None = None) -> AbstractContextManager[None]:
        """Enter a stage: emits ``stage_started``, and attributes the user's stdout written
        inside it to this stage (``stdout_printed.stage``). Exceptions propagate unchanged,
        and the runner reports the stage they escaped from in ``run_failed.stage``."""
        ...


def eval_option(option: str | None, name: str, env: dict[str, Any]) -> Any:
    """``options.<name>`` (a Python expression the user typed in the view or passed to the
    CLI) evaluated in ``env`` (the snippet's namespace); ``None`` when unset or blank. Any error
    of the expression (a SyntaxError, a NameError, JAX refusing a 9-device mesh on 8 devices)
    is :class:`~jaxscope.sandbox.snippet.InvalidSnippet` naming the option, not the user's
    ``f``: the option, not the snippet, is at fault."""
    from jaxscope.sandbox.snippet import InvalidSnippet

    if option is None or not option.strip():
        return None
    try:
        return eval(option, env)  # the user's own expression, in the sandbox
    except Exception as exc:
        raise InvalidSnippet(
            f"options.{name} = {option!r} could not be evaluated: {type(exc).__name__}: {exc}"
        ) from exc


# The attribute :func:`blame_line` sets on an exception: ``(line, function, explanation)``;
# ``line`` is None when :func:`blame_typed` set it (no snippet line is at fault).
BLAME_ATTR = "_jaxscope_blame"


def setting_line(source: str, name: str) -> int | None:
    """The line of the last top-level statement of ``source`` that binds ``name`` (``name =
    ...``, ``name: T = ...``, ``name += ...``, ``def name``/``class name``), found with
    :mod:`ast`; ``None`` when no statement does (or the source does not parse)."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: int | None = None
    for stmt in tree.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = list(stmt.targets)
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
            targets = [stmt.target]
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name == name:
                found = stmt.lineno
            continue
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if name in names:
            found = stmt.lineno
    return found


def snippet_setting_line(name: str) -> int | None:
    """:func:`setting_line` of ``name`` in the snippet being run, read from :mod:`linecache`
    (where ``load_snippet`` registers its source under :data:`SNIPPET_FILENAME`): for code that
    is handed a setting's value but not the snippet (``grad_argnums.choose_argnums``)."""
    import linecache

    source = "".join(linecache.getlines(SNIPPET_FILENAME))
    return setting_line(source, name) if source else None


def blame_line(
    exc: BaseException,
    line: int | None,
    function: str = "<module>",
    explanation: str | None = None,
) -> BaseException:
    """Mark ``exc`` (raised by JAX or a probe, with no frame in the snippet) as caused by the
    snippet's ``line`` (e.g. the ``args = ...`` line that built a cyclic container, or the line
    that sets a snippet setting): the runner's ``run_failed`` then points there, with
    ``explanation`` (or none) instead of "JAX raised this while handling f as a whole". A
    traceback frame in the snippet still wins. Returns ``exc`` (``raise blame_line(err, 3)``)."""
    if line is not None:
        try:
            setattr(exc, BLAME_ATTR, (line, function, explanation))
        except (AttributeError, TypeError):  # an exception type without a __dict__
            pass
    return exc


def blame_typed(exc: BaseException, explanation: str) -> BaseException:
    """Mark ``exc`` as caused by something the user typed in the exhibit's controls (not in the
    snippet), e.g. the arguments of a "call again": ``run_failed`` then names no snippet line
    (rather than ``f``'s ``def`` line) and gives ``explanation``. A traceback frame in the
    snippet still wins (the typed value reached a line of the snippet that raised). Returns
    ``exc``."""
    try:
        setattr(exc, BLAME_ATTR, (None, "<input>", explanation))
    except (AttributeError, TypeError):  # an exception type without a __dict__
        pass
    return exc


# The attribute :func:`explain` sets on an exception: the exhibit's plain words about it.
EXPLAIN_ATTR = "_jaxscope_explain"


def explain(exc: BaseException, explanation: str) -> BaseException:
    """Give ``exc`` (JAX's own error, kept as raised) the exhibit's ``explanation`` for
    ``run_failed``, where JAX's message says too little (a bare ``AssertionError`` at a line of
    the snippet). Unlike :func:`blame_line` it leaves the line to the traceback; an explanation
    the runner finds itself (a blamed line's, a tracer error's) wins. Returns ``exc``."""
    try:
        setattr(exc, EXPLAIN_ATTR, explanation)
    except (AttributeError, TypeError):  # an exception type without a __dict__
        pass
    return exc


# The attribute :func:`mark_during` sets on an exception: the words ``run_failed.during`` shows.
DURING_ATTR = "_jaxscope_during"


def mark_during(exc: BaseException, what: str) -> BaseException:
    """Say where in the exhibit's machinery ``exc`` was raised, more precisely than the stage
    (``ctx.stage`` names only load/trace/lower/compile/run/call): ``what`` is a phrase such as
    ``"while transposing double (the backward pass)"``, reported as ``run_failed.during`` and
    shown by the error panel instead of ``during <stage>``. The first mark wins (the innermost).
    Returns ``exc``."""
    if getattr(exc, DURING_ATTR, None) is None:
        try:
            setattr(exc, DURING_ATTR, what)
        except (AttributeError, TypeError):  # an exception type without a __dict__
            pass
    return exc


@contextmanager
def during(what: str) -> Iterator[None]:
    """:func:`mark_during` every exception escaping the block with ``what`` (re-raised as is)."""
    try:
        yield
    except Exception as exc:
        mark_during(exc, what)
        raise
