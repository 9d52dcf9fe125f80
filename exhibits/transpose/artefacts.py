"""The transpose exhibit's ``--print`` table: ``gradient`` (JSON, one entry per element of
``args``: an array argument as nested lists of floats, a pytree argument as the list of its
leaves in ``jax.tree.leaves`` order (a dict's by sorted key, an OrderedDict's in insertion
order, nested containers flattened), each nested lists of floats; ``null`` for an argument not
differentiated), ``fd_check`` (JSON ``{"max_abs_err": ..., "max_rel_err": ..., "compared": N,
"not_compared": [...], "not_compared_count": M}`` against central differences in float64: the
errors over the elements where the finite difference and both gradients are finite, and each
element left out because one of them is NaN or Inf, as ``{"path", "index", "gradient",
"gradient_f64", "finite_difference"}``), ``attempts`` (JSON, ``jax.jit(jax.grad(f))`` and
``jax.grad(f)``: ``mode``, ``ok``, JAX's ``error_class``/``message``, the snippet ``line``, the
``explanation`` and ``fix``) and ``linear_jaxpr`` (JAX's text of the jaxpr the walk runs
backwards). ``SHOWN_ERRORS``: the attempts JAX refused in a run that finished
(``exhibits/shown.py``). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventModel, GradAttempted, GradientChecked, LinearJaxprStaged

from exhibits.shown import ShownError

_COMPUTATION = {"eager": "jax.grad(f)", "jit": "jax.jit(jax.grad(f))"}


def _checked(events: Sequence[EventModel]) -> GradientChecked | None:
    found = [e for e in events if isinstance(e, GradientChecked)]
    return found[-1] if found else None


def _gradient(events: Sequence[EventModel]) -> str | None:
    c = _checked(events)
    return json.dumps(c.gradient) if c else None


def _fd_check(events: Sequence[EventModel]) -> str | None:
    c = _checked(events)
    if c is None:
        return None
    return json.dumps(
        {
            "max_abs_err": c.max_abs_err,
            "max_rel_err": c.max_rel_err,
            "compared": c.compared,
            "not_compared": [n.model_dump() for n in c.not_compared],
            "not_compared_count": c.not_compared_count,
        }
    )


def _attempted(events: Sequence[EventModel]) -> list[GradAttempted]:
    return [e for e in events if isinstance(e, GradAttempted)]


def _attempts(events: Sequence[EventModel]) -> str | None:
    found = _attempted(events)
    if not found:
        return None
    return json.dumps(
        [
            {
                "mode": a.mode,
                "computation": _COMPUTATION[a.mode],
                "ok": a.ok,
                "error_class": a.error_class,
                "message": a.message,
                "line": a.source.line if a.source else None,
                "explanation": a.explanation,
                "fix": a.fix,
            }
            for a in found
        ]
    )


def _linear(events: Sequence[EventModel]) -> str | None:
    found = [e for e in events if isinstance(e, LinearJaxprStaged)]
    return found[-1].jaxpr.text if found else None


def _shown_errors(events: Sequence[EventModel]) -> list[ShownError]:
    attempts = _attempted(events)
    checked = _checked(events)
    note: str | None = None
    if any(a.ok and a.mode == "eager" for a in attempts):
        note = "the walk and the gradient shown are the eager ones, which saw concrete values"
    elif checked is not None and checked.seed != "1.0":
        note = f"the walk's seed cotangent is {checked.seed}"
    out: list[ShownError] = []
    for a in attempts:
        if a.ok:
            continue
        out.append(
            ShownError(
                error_class=a.error_class or "Error",
                message=a.message or "",
                computation=_COMPUTATION[a.mode],
                artefact="attempts",
                line=a.source.line if a.source else None,
                note=note,
            )
        )
    return out


ARTEFACTS = {
    "gradient": _gradient,
    "fd_check": _fd_check,
    "attempts": _attempts,
    "linear_jaxpr": _linear,
}
SHOWN_ERRORS = _shown_errors
