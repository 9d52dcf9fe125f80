"""The partial_eval exhibit's ``--print`` table: the known and unknown jaxprs (JAX's text); the
residuals as JSON, one object per residual in order, with what the page's residual table shows:
``index``, ``known_var`` (its name in the known jaxpr's printout: one of its last outvars),
``unknown_var`` (its name in the unknown jaxpr's: one of its first invars), ``aval`` (``f32[3]``),
``bytes``, ``what`` (``output of sin``, ``the argument primal args[0]``), ``primitive`` and
``known_eqn`` (the known eqn that produced it; ``null`` for an input), ``line`` (that eqn's user
line) and ``read_by`` (the unknown eqns that read it: ``eqn``, ``primitive``, ``line``). A
program too large for one event (``jaxscope.summaries``: the 20,000-eqn loop) has its jaxprs as
summaries of their first eqns: then ``primitive`` is ``null`` for a producer past them and
``read_by`` is ``null`` (not known: a reader may be past them), never a partial list; and
``remat``, the remat table as JSON ``{"rows": [...], "unavailable": ...}`` (``unavailable``:
why there are no rows, with JAX's error, when ``jax.grad`` refused ``f``; a row's
``not_measured``: why its ``temp_bytes``, ``step_ms`` and ``grad_max_abs_diff`` are ``null``, a
program too large to compile once per row). ``SHOWN_ERRORS``:
that refusal (``exhibits/shown.py``). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jaxscope.exhibit_api import EqnView, EventBase, JaxprView

from exhibits.partial_eval.events import JaxprSplit, RematPolicyMeasured, RematUnavailable
from exhibits.shown import ShownError


def _split(events: Sequence[EventBase]) -> JaxprSplit | None:
    found = [e for e in events if isinstance(e, JaxprSplit)]
    return found[-1] if found else None


def _known(events: Sequence[EventBase]) -> str | None:
    s = _split(events)
    return s.known.text if s else None


def _unknown(events: Sequence[EventBase]) -> str | None:
    s = _split(events)
    return s.unknown.text if s else None


def _readers(jaxpr: JaxprView) -> dict[str, list[dict[str, Any]]] | None:
    """The eqns of ``jaxpr`` that read each variable, by name, in order (one pass: a 20,000-eqn
    program has 5,000 residuals); None when the view is a summary (its first eqns of
    ``total_eqns``): a reader may be among the eqns it leaves out."""
    if jaxpr.total_eqns is not None and jaxpr.total_eqns > len(jaxpr.eqns):
        return None
    readers: dict[str, list[dict[str, Any]]] = {}
    for e in jaxpr.eqns:
        line = e.source.line if e.source else None
        row = {"eqn": e.index, "primitive": e.primitive, "line": line}
        for name in dict.fromkeys(v.name for v in e.invars if not v.literal):
            readers.setdefault(name, []).append(row)
    return readers


def _eqn(jaxpr: JaxprView, index: int | None) -> EqnView | None:
    """Eqn ``index`` of ``jaxpr``; None for None, or when the view is a summary whose first eqns
    stop before it."""
    if index is None:
        return None
    found = jaxpr.eqns[index] if index < len(jaxpr.eqns) else None
    if found is None or found.index != index:
        found = next((e for e in jaxpr.eqns if e.index == index), None)
    return found


def _residuals(events: Sequence[EventBase]) -> str | None:
    s = _split(events)
    if s is None:
        return None
    # Residual i is outvar (n_known_out + i) of the known jaxpr and invar i of the unknown one
    # (partial_eval_jaxpr_nounits' convention, as the page's view model reads it).
    n_known_out = len(s.known.outvars) - len(s.residuals)
    readers = _readers(s.unknown)
    rows = []
    for i, r in enumerate(s.residuals):
        unknown_var = s.unknown.invars[i].name if i < len(s.unknown.invars) else None
        producer = _eqn(s.known, r.known_eqn)
        rows.append(
            {
                "index": i,
                "known_var": s.known.outvars[n_known_out + i].name,
                "unknown_var": unknown_var,
                "aval": r.aval.short,
                "bytes": r.bytes,
                "what": r.description,
                "primitive": producer.primitive if producer else None,
                "known_eqn": r.known_eqn,
                "line": r.source.line if r.source else None,
                "read_by": None if readers is None else readers.get(unknown_var or "", []),
            }
        )
    return json.dumps(rows)


def _unavailable(events: Sequence[EventBase]) -> RematUnavailable | None:
    found = [e for e in events if isinstance(e, RematUnavailable)]
    return found[-1] if found else None


def _remat(events: Sequence[EventBase]) -> str | None:
    rows = [e for e in events if isinstance(e, RematPolicyMeasured)]
    gone = _unavailable(events)
    if not rows and gone is None:
        return None
    return json.dumps(
        {
            "rows": [
                {
                    "policy": r.policy,
                    "saved": [s.aval.short for s in r.saved],
                    # of those, the primal inputs the backward pass keeps ("from the argument
                    # ..."): not computed values (all of them under nothing_saveable; design 0084)
                    "saved_inputs": sum(
                        1 for s in r.saved if s.description.startswith("from the argument")
                    ),
                    "residual_bytes": r.residual_bytes,
                    "temp_bytes": r.temp_bytes,
                    "step_ms": r.step_ms,
                    "grad_max_abs_diff": r.grad_max_abs_diff,
                    "not_measured": r.not_measured,
                }
                for r in rows
            ],
            "unavailable": None
            if gone is None
            else {
                "reason": gone.reason,
                "error_class": gone.error_class,
                "message": gone.message,
                "explanation": gone.explanation,
            },
        }
    )


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    gone = _unavailable(events)
    if gone is None or gone.reason != "grad_fails":
        return []
    return [
        ShownError(
            error_class=gone.error_class,
            message=gone.message,
            computation="jax.grad(f) (the remat table)",
            artefact="remat",
            note="the split (known_jaxpr, unknown_jaxpr, residuals) is forward mode and valid",
        )
    ]


ARTEFACTS = {
    "known_jaxpr": _known,
    "unknown_jaxpr": _unknown,
    "residuals": _residuals,
    "remat": _remat,
}
SHOWN_ERRORS = _shown_errors
