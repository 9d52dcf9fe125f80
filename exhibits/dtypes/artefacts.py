"""The dtypes exhibit's ``--print`` table: ``result_type`` is JSON ``{"x64_off": ..., "x64_on":
...}``, each ``{"dtype", "weak", "code"}`` (what ``jax.dtypes.result_type(*leaves,
return_weak_type_flag=True)`` gave); ``table`` is the promotion table with x64 off and with x64
on, as text (rows and columns in the order of JAX's type promotion docs; ``i*``/``f*``/``c*``
the weak types); ``changes`` the dtype changes JAX made without being asked (JSON list, each
``{"kind", "api", "line", "from_type", "to_type", "partner", "count", "changed", "total",
"example", "finding", "corrupted", "corruption", "corrupt_example", "primitive", "fix"}``:
``DtypeChangesFound``), ``[]`` when none.

``SHOWN_ERRORS``: each promotion is a finding (``DtypePromoted``), unless the operand it met
was made wider on purpose (an explicit upcast, ``preferred_element_type``, ``dtype=``: a note
whose fix upcasts the narrow side, ``docs/design/0062``), and so is a demotion that
corrupts values (``DtypeDemoted``: overflow, underflow, a whole number lost, an integer
wrapped), and so is a bfloat16/float16 result that loses what float32 keeps (``PrecisionLost``,
with the fix its eqn takes): ``jaxscope run`` exits 3 with one stderr line per finding, at its
line. A demotion
that only rounds floats to float32, as JAX documents, and such a promotion are in ``NOTES``:
one stderr line each, exit status 0. Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

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
                "finding": c.finding,
                "corrupted": c.corrupted,
                "corruption": c.corruption,
                "corrupt_example": c.corrupt_example,
                "primitive": c.primitive,
                "fix": c.fix,
            }
            for c in found.changes
        ]
    )


# How a corrupted value was changed, in words (``DtypeChange.corruption``).
CORRUPTIONS = {
    "overflow": "overflow to inf",
    "underflow": "underflow to 0 or to float32 subnormals that lose digits",
    "whole_number": "are whole numbers above 2**24 that float32 holds as other whole numbers",
    "wrapped": "lie outside the 32-bit range and wrap around",
}

# How a low-precision result differs from float32's (``DtypeChange.corruption`` of a
# ``precision_lost`` change).
LOSSES = {
    "overflow": "overflow to inf where float32 is finite",
    "whole_number": "are whole numbers that {dtype} holds as other whole numbers",
    "beyond_rounding": "differ from float32 by more than {dtype}'s rounding",
}


def headline(c: DtypeChange) -> str:
    """The change in one sentence (the CLI's stderr line; the page says the same)."""
    if c.kind == "precision_lost":
        how = LOSSES[c.corruption or "beyond_rounding"].format(dtype=c.from_dtype)
        lines = f" ({c.count} eqns at this line)" if c.count > 1 else ""
        return (
            f"{c.from_type} result of {c.api} ({c.primitive}) loses what float32 keeps:"
            f" {c.changed} of {c.total} values {how} ({c.example}){lines}"
        )
    if c.kind == "demoted":
        head = f"{c.api} is {c.from_type}; with x64 off JAX holds it as {c.to_type}"
        if not c.finding:
            return (
                f"{head}, and rounds {c.changed} of {c.total} values to"
                f" {c.to_dtype} ({c.example}), as JAX documents"
            )
        how = CORRUPTIONS[c.corruption or "wrapped"]
        rest = f"; {c.changed} values change in all" if c.changed != c.corrupted else ""
        return f"{head}, and {c.corrupted} of {c.total} values {how} ({c.corrupt_example}){rest}"
    met = f" with {c.partner}" if c.partner else ""
    purpose = "" if c.finding else f", which was made {c.to_dtype} on purpose"
    return (
        f"{c.from_type} promoted to {c.to_type} by {c.api}{met}{purpose}; the wider dtype lasts"
        " to f's output"
    )


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    found = _last_changes(events)
    if found is None:
        return []
    return [
        ShownError(
            error_class=ERROR_CLASSES[c.kind],
            message=headline(c),
            computation=COMPUTATIONS[c.kind],
            artefact="changes",
            line=c.source.line if c.source else None,
            kind="finding",
            note=c.fix or FIXES[c.kind],
        )
        for c in found.changes
        if c.finding
    ]


def NOTES(events: Sequence[EventBase]) -> list[str]:
    """The changes that are not findings (a float64 argument only rounded to float32), one
    line each: ``jaxscope run`` prints them on stderr and the exit status stays as it is."""
    found = _last_changes(events)
    if found is None:
        return []
    unchecked = (
        [
            "PrecisionUnchecked: low-precision results not compared with float32:"
            f" {found.precision_unchecked}"
        ]
        if found.precision_unchecked
        else []
    )
    return [
        f"{ERROR_CLASSES[c.kind]} at line {c.source.line if c.source else '?'}, not a finding:"
        f" {headline(c)}{f'; fix: {c.fix}' if c.fix else ''} (--print changes)"
        for c in found.changes
        if not c.finding
    ] + unchecked


ERROR_CLASSES = {
    "promoted": "DtypePromoted",
    "demoted": "DtypeDemoted",
    "precision_lost": "PrecisionLost",
}
COMPUTATIONS = {
    "promoted": "jax.make_jaxpr(f)(*args), promotions read eqn by eqn",
    "demoted": "args as JAX takes them (jax.device_put, x64 off)",
    "precision_lost": "f(*args) eqn by eqn as written and in float32, each result compared",
}

# The fix the CLI says under a finding, per kind of change (a precision_lost change carries
# its own, for its eqn).
FIXES = {
    "promoted": "give the constant or the other operand the value's dtype (a Python scalar,"
    " or .astype(x.dtype)), or convert on purpose with .astype",
    "demoted": "turn on jax_enable_x64 to keep 64 bits, or bring the values into what 32 bits"
    " hold before JAX takes them (rescale, offset or reduce them in numpy)",
    "precision_lost": "compute it in float32 (preferred_element_type, or an upcast)",
}

ARTEFACTS = {"result_type": _result_type, "table": _table, "changes": _changes}
SHOWN_ERRORS = _shown_errors
