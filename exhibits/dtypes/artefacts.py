"""The dtypes exhibit's ``--print`` table: ``result_type`` is JSON ``{"x64_off": ..., "x64_on":
...}``, each ``{"dtype", "weak", "code"}`` (what ``jax.dtypes.result_type(*leaves,
return_weak_type_flag=True)`` gave); ``table`` is the promotion table with x64 off and with x64
on, as text (rows and columns in the order of JAX's type promotion docs; ``i*``/``f*``/``c*``
the weak types); ``changes`` the dtype changes JAX made without being asked (JSON list, each
``{"kind", "api", "line", "from_type", "to_type", "partner", "count", "changed", "total",
"example"}``: ``DtypeChangesFound``), ``[]`` when none.

``SHOWN_ERRORS``: each change is a finding (``DtypePromoted``, ``DtypeDemoted``): ``jaxscope
run`` exits 3 with one stderr line per change, at its line. Imports only the protocol and this
exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventBase

from exhibits.shown import ShownError

from .events import DtypeChange, DtypeChangesFound, PromotionTabulated, ResultTypeComputed


def _result_type(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, ResultTypeComputed)]
    if not found or not found[-1].answers:
        return None
    return json.dumps(
        {
            ("x64_on" if a.x64 else "x64_off"): {"dtype": a.dtype, "weak": a.weak, "code": a.code}
            for a in found[-1].answers
        }
    )


def _table(events: Sequence[EventBase]) -> str | None:
    tables = [e for e in events if isinstance(e, PromotionTabulated)]
    if not tables:
        return None
    blocks = []
    for t in tables:
        codes = [n.code for n in t.types]
        width = max(len(c) for c in codes) + 1
        lines = [f"# jnp.promote_types, x64 {'on' if t.x64 else 'off'}"]
        lines.append(" " * width + "".join(c.rjust(width) for c in codes))
        for code, row in zip(codes, t.cells, strict=True):
            lines.append(code.rjust(width) + "".join(c.join.code.rjust(width) for c in row))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _last_changes(events: Sequence[EventBase]) -> DtypeChangesFound | None:
    found = [e for e in events if isinstance(e, DtypeChangesFound)]
    return found[-1] if found else None


def _changes(events: Sequence[EventBase]) -> str | None:
    found = _last_changes(events)
    if found is None:
        return None
    return json.dumps(
        [
            {
                "kind": c.kind,
                "api": c.api,
                "line": c.source.line if c.source else None,
                "from_type": c.from_type,
                "to_type": c.to_type,
                "partner": c.partner,
                "count": c.count,
                "changed": c.changed,
                "total": c.total,
                "example": c.example,
            }
            for c in found.changes
        ]
    )


def headline(c: DtypeChange) -> str:
    """The change in one sentence (the CLI's stderr line; the page says the same)."""
    if c.kind == "demoted":
        return (
            f"{c.api} is {c.from_type}; with x64 off JAX holds it as {c.to_type}, and"
            f" {c.changed} of {c.total} values change ({c.example})"
        )
    met = f" with {c.partner}" if c.partner else ""
    return (
        f"{c.from_type} promoted to {c.to_type} by {c.api}{met}; the wider dtype lasts to"
        " f's output"
    )


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    found = _last_changes(events)
    if found is None:
        return []
    return [
        ShownError(
            error_class="DtypePromoted" if c.kind == "promoted" else "DtypeDemoted",
            message=headline(c),
            computation="jax.make_jaxpr(f)(*args), promotions read eqn by eqn"
            if c.kind == "promoted"
            else "args as JAX takes them (jax.device_put, x64 off)",
            artefact="changes",
            line=c.source.line if c.source else None,
            kind="finding",
            note=NOTES[c.kind],
        )
        for c in found.changes
    ]


NOTES = {
    "promoted": "give the constant or the other operand the value's dtype (a Python scalar,"
    " or .astype(x.dtype)), or convert on purpose with .astype",
    "demoted": "turn on jax_enable_x64 to keep 64 bits, or make the array float32 yourself"
    " (np.asarray(a, np.float32)) so the rounding is yours",
}

ARTEFACTS = {"result_type": _result_type, "table": _table, "changes": _changes}
SHOWN_ERRORS = _shown_errors
