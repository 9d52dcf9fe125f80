"""The review exhibit's ``--print`` artefacts (``jaxscope run review FILE --print findings``):

- ``findings``: a JSON list, one ``{"kind", "line", "message", "fix"}`` per finding, in line
  order (``[]`` when the step is clean).
- ``args``: a JSON list, one ``{"function", "line", "args"}`` per jitted function the steps
  called, ``args`` a list of ``{"index", "name", "static", "detail"}`` (``detail``: the static
  value's ``repr``, or the dynamic leaves' avals).

``SHOWN_ERRORS``: each finding (``kind="finding"``, ``exhibits/shown.py``); a tracer error JAX
raised in a step is shown as JAX's error (``kind="error"``). ``jaxscope run`` exits 3 on either.

Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.shown import ShownError

from .events import ReviewArgsRead, ReviewFindingsFound

# Errors JAX raised (the step could not run), shown as errors rather than findings.
TRACER_KINDS = (
    "TracerBoolConversion",
    "ConcretizationTypeError",
    "TracerIntegerConversion",
    "TracerArrayConversion",
    "NonConcreteBooleanIndex",
    "UnexpectedTracer",
)


def _findings(events: Sequence[EventBase]) -> str | None:
    done = [e for e in events if isinstance(e, ReviewFindingsFound)]
    if not done:
        return None
    return json.dumps(
        [
            {"kind": f.kind, "line": f.line, "message": f.message, "fix": f.fix}
            for e in done
            for f in e.findings
        ],
        indent=1,
    )


def _args(events: Sequence[EventBase]) -> str | None:
    read = [e for e in events if isinstance(e, ReviewArgsRead)]
    if not read:
        return None
    return json.dumps(
        [
            {
                "function": fn.function,
                "line": fn.line,
                "args": [a.model_dump() for a in fn.args],
            }
            for e in read
            for fn in e.functions
        ],
        indent=1,
    )


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    return [
        ShownError(
            error_class=f.kind,
            message=f.message,
            computation="the training step f, run as written",
            artefact="findings",
            line=f.line,
            note=f.fix,
            kind="error" if f.kind in TRACER_KINDS else "finding",
        )
        for e in events
        if isinstance(e, ReviewFindingsFound)
        for f in e.findings
    ]


ARTEFACTS = {"findings": _findings, "args": _args}
SHOWN_ERRORS = _shown_errors
