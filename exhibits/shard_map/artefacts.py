"""The shard_map exhibit's ``--print`` table: ``verdict`` is JSON ``{"ok": bool, "error_class":
..., "check": ..., "message": ...}`` (``check``: which of shard_map's checks failed; ``message``:
JAX's text verbatim; ``line``: the snippet line of the specs at fault when a spec check failed,
e.g. ``out_specs = P("x", "w")``; ``explanation``: the exhibit's words beside JAX's error;
``reference``: what the outputs were compared with (``reference``, ``f`` or ``none``) and
``differs``, one entry per output past tolerance: ``{"path", "index", "got", "want",
"max_abs_diff"}``; ``replicas_differ``: the outputs whose devices disagree on a block
out_specs says they share; ``found``: for real code whose ``f`` calls ``jax.shard_map`` itself,
``{"sites": [{"line", "within", "reachable"}, ...], "shown": index}``, else null). ``ok`` is
false when JAX refused the program *or* an output differs from the
reference: a wrong result is a finding, not a pass.
``SHOWN_ERRORS``: the check JAX failed, or the outputs that differ from the reference
(``ReferenceMismatch``, a finding: ``jaxscope run`` exits 3 and says what differs on stderr)
(``exhibits/shown.py``). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.shard_map.events import ShardMapChecked, ShardMapOutput, ShardMapOutputsAssembled
from exhibits.shown import ShownError


def _checked(events: Sequence[EventBase]) -> ShardMapChecked | None:
    found = [e for e in events if isinstance(e, ShardMapChecked)]
    return found[-1] if found else None


def _assembled(events: Sequence[EventBase]) -> ShardMapOutputsAssembled | None:
    found = [e for e in events if isinstance(e, ShardMapOutputsAssembled)]
    return found[-1] if found else None


def _differing(events: Sequence[EventBase]) -> list[ShardMapOutput]:
    a = _assembled(events)
    return [o for o in a.outputs if o.matches_reference is False] if a else []


def _what_differs(o: ShardMapOutput) -> str:
    if o.first_diff_index is None:
        return f"{o.path} differs (shape or values)"
    at = ", ".join(str(i) for i in o.first_diff_index)
    where = f"{o.path}[{at}]" if at else o.path
    return f"{where} is {o.first_diff_got:.8g}, the reference has {o.first_diff_want:.8g}" + (
        f" (max |difference| {o.max_abs_diff:.3g})" if o.max_abs_diff is not None else ""
    )


def _verdict(events: Sequence[EventBase]) -> str | None:
    e = _checked(events)
    if e is None:
        return None
    a = _assembled(events)
    differs = _differing(events)
    return json.dumps(
        {
            "ok": e.ok and not differs and not (a and any(o.replicas_differ for o in a.outputs)),
            "error_class": e.error_class,
            "check": e.check,
            "message": e.message,
            "line": e.line,
            "explanation": e.explanation,
            "reference": a.reference if a else None,
            "replicas_differ": [o.path for o in a.outputs if o.replicas_differ] if a else [],
            # real code: the shard_map calls found inside f, and which one was checked
            "found": e.found.model_dump() if e.found else None,
            "differs": [
                {
                    "path": o.path,
                    "index": o.first_diff_index,
                    "got": o.first_diff_got,
                    "want": o.first_diff_want,
                    "max_abs_diff": o.max_abs_diff,
                }
                for o in differs
            ],
        }
    )


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    e = _checked(events)
    if e is None:
        return []
    if e.ok:
        return _mismatches(events) + _replicas(events)
    what = "the body" if e.check in (None, "body") else f"shard_map's {e.check} check"
    return [
        ShownError(
            error_class=e.error_class or "Error",
            message=e.message or "",
            computation=f"jax.jit(jax.shard_map(f, ...)): {what}",
            artefact="verdict",
            line=e.line,
            note=e.explanation,
        )
    ]


def _mismatches(events: Sequence[EventBase]) -> list[ShownError]:
    """The outputs that differ from the reference, as one finding: JAX ran the program without
    complaint, and it computed something else than the reference."""
    a = _assembled(events)
    differs = _differing(events)
    if a is None or not differs:
        return []
    against = (
        "the snippet's reference(*args)"
        if a.reference == "reference"
        else "f(*args) on the global arrays (the same function without shard_map)"
    )
    note = None
    if a.reference == "f":
        note = (
            "inside shard_map f sees each device's block, not the global array: a reduction "
            "(sum, mean, max, a norm) over a sharded axis needs a collective (jax.lax.psum, "
            "pmean, pmax) to be global; an elementwise f matches"
        )
    return [
        ShownError(
            error_class="ReferenceMismatch",
            message=f"{len(differs)} of {len(a.outputs)} outputs differ from {against}: "
            + "; ".join(_what_differs(o) for o in differs[:3]),
            computation="jax.jit(jax.shard_map(f, ...))(*args)",
            artefact="verdict",
            note=note,
            kind="finding",
        )
    ]


def _replicas(events: Sequence[EventBase]) -> list[ShownError]:
    """Outputs whose devices disagree on a block out_specs says they share, as one finding:
    the global array holds one device's copy, the others computed something else."""
    a = _assembled(events)
    bad = [o for o in (a.outputs if a else []) if o.replicas_differ is not None]
    if a is None or not bad:
        return []
    parts = []
    for o in bad[:3]:
        d = o.replicas_differ
        assert d is not None
        parts.append(
            f"{o.path} (out_specs {o.spec}): {d.device} holds {d.value:g} and {d.other} holds "
            f"{d.other_value:g} at {d.index} of the block they share"
        )
    return [
        ShownError(
            error_class="ReplicasDiffer",
            message=f"{len(bad)} of {len(a.outputs)} outputs are not the same on the devices "
            "that out_specs says hold the same values: " + "; ".join(parts),
            computation="jax.jit(jax.shard_map(f, ...))(*args)",
            artefact="verdict",
            line=a.out_specs_line,
            note="out_specs leaves the output unsplit over a mesh axis the body's value still "
            "varies over; with check_vma=False JAX trusts it and returns one device's copy. Make "
            "the value the same along that axis (jax.lax.psum / pmean / all_gather), or split "
            "the output over it in out_specs",
            kind="finding",
        )
    ]


ARTEFACTS = {"verdict": _verdict}
SHOWN_ERRORS = _shown_errors
