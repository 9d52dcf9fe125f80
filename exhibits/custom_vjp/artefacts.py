"""The custom_vjp exhibit's ``--print`` table. ``check`` is JSON: the custom function's ``name``,
``kind``, ``verdict``, one entry per floating leaf of ``args`` (``path``, the gradient with the
rule ``custom``, ``autodiff`` without it (both in the leaf's dtype's digits:
``exhibits/digits.py``), ``finite_difference``, and ``max_abs_diff_autodiff``/
``max_abs_diff_fd``), the ``attempts`` (eager and jitted grad: ``ok``, ``error_class``,
``message`` (the error's text, JAX's or the user's rule's own), ``line``) and the ``problems``
found (``kind``, ``severity``, ``title``, ``error_class``, ``error_message``, ``line``). The
last custom function checked when there are several. ``SHOWN_ERRORS``: the gradient attempts JAX
refused (``exhibits/shown.py``). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.custom_vjp.events import CustomRuleChecked
from exhibits.digits import in_dtype
from exhibits.shown import ShownError, unique


def _check(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, CustomRuleChecked)]
    if not found:
        return None
    e = found[-1]
    return json.dumps(
        {
            "name": e.name,
            "kind": e.kind,
            "verdict": e.verdict,
            "arguments": [
                {
                    "path": a.path,
                    "custom": in_dtype(a.custom, a.aval.dtype),
                    "autodiff": in_dtype(a.autodiff, a.aval.dtype),
                    "finite_difference": a.finite_difference,
                    "max_abs_diff_autodiff": a.max_abs_diff_autodiff,
                    "max_abs_diff_fd": a.max_abs_diff_fd,
                }
                for a in e.arguments
            ],
            "attempts": [
                {
                    "mode": t.mode,
                    "ok": t.ok,
                    "error_class": t.error_class,
                    "message": t.message,
                    "line": t.source.line if t.source else None,
                }
                for t in e.attempts
            ],
            "problems": [
                {
                    "kind": p.kind,
                    "severity": p.severity,
                    "title": p.title,
                    "error_class": p.error_class,
                    "error_message": p.error_message,
                    "line": p.source.line if p.source else None,
                }
                for p in e.problems
            ],
        }
    )


_COMPUTATION = {"eager": "jax.grad(f)", "jit": "jax.jit(jax.grad(f))"}


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    """Each way of taking ``f``'s gradient with the custom rule that raised (the same for every
    custom function checked: repeats dropped)."""
    return unique(
        [
            ShownError(
                error_class=t.error_class or "Error",
                message=t.message or "",
                computation=_COMPUTATION[t.mode],
                artefact="check",
                line=t.source.line if t.source else None,
            )
            for e in events
            if isinstance(e, CustomRuleChecked)
            for t in e.attempts
            if not t.ok
        ]
    )


ARTEFACTS = {"check": _check}
SHOWN_ERRORS = _shown_errors
