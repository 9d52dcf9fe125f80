"""``jaxscope diff EXHIBIT A.py B.py --print ARTEFACT``: one artefact of two versions of a
snippet, as a unified diff (issue 18, "diff two versions").

Each file is run as ``jaxscope run EXHIBIT FILE --print ARTEFACT`` runs it (the same sandbox,
limits and options), one after the other, and the two artefacts' texts are compared line by
line with :func:`difflib.unified_diff`, headed by the two file names. Exit status, as
``diff(1)``: 0 the artefacts are the same, 1 they differ (the diff on stdout), 2 a usage error,
a run that failed, or a run that produced no such artefact (said on stderr, naming the file).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from exhibits.registry import EXHIBITS
from jaxscope.protocol import RunFailed, RunOptions
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
    for path in (ns.a, ns.b):
        text = _artefact(exhibit.id, ns.artefact, path, settings, options)
        if text is None:
            return EXIT_TROUBLE
        texts.append(text)
    diff = unified(texts[0], texts[1], str(ns.a), str(ns.b))
    sys.stdout.write(diff)
    return EXIT_DIFFERENT if diff else EXIT_SAME


def _artefact(
    exhibit: str, artefact: str, path: Path, settings: Settings, options: RunOptions
) -> str | None:
    """``artefact`` of one run on ``path``, or ``None`` (said on stderr) when it has none."""
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
    return text
