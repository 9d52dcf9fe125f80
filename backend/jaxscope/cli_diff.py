"""``jaxscope diff EXHIBIT A.py B.py --print ARTEFACT``: one artefact of two versions of a
snippet (issue 18, "diff two versions"; issue 31: structural by default).

Each file is run as ``jaxscope run EXHIBIT FILE --print ARTEFACT`` runs it (the same sandbox,
limits and options), one after the other. A jaxpr artefact (its text is a whole
:class:`~jaxscope.protocol.JaxprView`'s in both runs) is compared structurally, as the page
compares it (:mod:`jaxscope.structural_diff`, design 0043): the eqns that differ, with their
source lines, a count, and the runs of eqns that are the same up to variable names. Any other
artefact, a jaxpr summarised because it was too large to stream, or any artefact with
``--text``, is compared line by line with :func:`difflib.unified_diff`, headed by the two file
names. Exit status, as ``diff(1)``: 0 the artefacts are the same (structurally: up to variable
names), 1 they differ (the diff on stdout), 2 a usage error, a run that failed, or a run that
produced no such artefact (said on stderr, naming the file).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel

from exhibits.registry import EXHIBITS
from jaxscope import structural_diff
from jaxscope.protocol import EventBase, JaxprView, RunFailed, RunOptions
from jaxscope.settings import Settings

EXIT_SAME, EXIT_DIFFERENT, EXIT_TROUBLE = 0, 1, 2


def unified(a_text: str, b_text: str, a_name: str, b_name: str) -> str:
    """The unified diff of two texts (three lines of context), ``""`` when they are equal."""
    lines = difflib.unified_diff(
        a_text.splitlines(keepends=True),
        b_text.splitlines(keepends=True),
        fromfile=a_name,
        tofile=b_name,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def run_diff(ns: argparse.Namespace) -> int:
    """The ``diff`` command (module docstring)."""
    from jaxscope import cli

    exhibit = EXHIBITS.get(ns.exhibit)
    if exhibit is None:
        print(f"jaxscope diff: unknown exhibit {ns.exhibit!r}", file=sys.stderr)
        return EXIT_TROUBLE
    if ns.artefact not in exhibit.artefacts:
        print(
            f"jaxscope diff: exhibit {exhibit.id!r} has no artefact {ns.artefact!r}; "
            f"valid: {', '.join(exhibit.artefacts)}",
            file=sys.stderr,
        )
        return EXIT_TROUBLE
    prepared = cli.settings_and_options(ns, exhibit.id)
    if isinstance(prepared, str):
        print(prepared, file=sys.stderr)
        return EXIT_TROUBLE
    settings, options = prepared
    texts: list[str] = []
    views: list[JaxprView | None] = []
    for path in (ns.a, ns.b):
        got = _artefact(exhibit.id, ns.artefact, path, settings, options)
        if got is None:
            return EXIT_TROUBLE
        texts.append(got[0])
        views.append(got[1])
    a_view, b_view = views
    if ns.text or a_view is None or b_view is None:
        diff = unified(texts[0], texts[1], str(ns.a), str(ns.b))
    else:
        sources = tuple(_lines(p) for p in (ns.a, ns.b))
        diff = structural_diff.report(
            structural_diff.compare(a_view, b_view),
            ns.artefact,
            (str(ns.a), str(ns.b)),
            (sources[0], sources[1]),
        )
    sys.stdout.write(diff)
    return EXIT_DIFFERENT if diff else EXIT_SAME


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _views(value: object) -> Iterator[JaxprView]:
    """Every :class:`JaxprView` held in ``value`` (an event, its fields, lists and dicts)."""
    if isinstance(value, JaxprView):
        yield value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _views(getattr(value, name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _views(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _views(item)


def jaxpr_view(events: Sequence[EventBase], text: str) -> JaxprView | None:
    """The structured view whose text the artefact is (the last one), when it is a whole jaxpr:
    ``None`` for an artefact that is no jaxpr view's text (StableHLO, kernels joined) and for a
    view summarised or streamed in part (``total_eqns``, ``eqn_ranges``)."""
    found = [v for v in _views(list(events)) if v.text == text]
    if not found:
        return None
    view = found[-1]
    if view.total_eqns is not None or view.eqn_ranges or view.list_ranges:
        return None
    return view


def _artefact(
    exhibit: str, artefact: str, path: Path, settings: Settings, options: RunOptions
) -> tuple[str, JaxprView | None] | None:
    """``artefact`` of one run on ``path`` and its jaxpr view where it is a jaxpr's text
    (:func:`jaxpr_view`), or ``None`` (said on stderr) when it has none."""
    from jaxscope import cli

    try:
        code = cli._read_file(path)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"jaxscope diff: cannot read {path}: {exc}", file=sys.stderr)
        return None
    if (too_long := cli.code_too_long(code, str(path))) is not None:
        print(f"jaxscope diff: {too_long}", file=sys.stderr)
        return None
    events = cli.run_headless_sync(exhibit, code, settings, options=options)
    if isinstance(events[-1], RunFailed):
        sys.stderr.write(f"jaxscope diff: the run on {path} failed\n")
        sys.stderr.write(cli.describe_failure(events[-1]))
        return None
    text = EXHIBITS[exhibit].artefacts[artefact](events)
    if text is None:
        print(f"jaxscope diff: the run on {path} produced no {artefact!r}", file=sys.stderr)
        return None
    return text, jaxpr_view(events, text)
