"""The transpose exhibit's ``--print`` table: ``verdict`` (JSON ``{"ok", "verdict", "headline",
"checked", "disagree_count", "not_compared_count", "first"}``: the gradient held to float64
finite differences at its dtype's precision, ``GradientChecked``'s verdict (``agree``,
``disagree``, ``incomplete``; ``ok`` only for ``agree``), its headline sentence, and ``first``
the first disagreeing element (or, for ``incomplete``, the first left out), as in
``fd_check``), ``gradient`` (JSON, one entry per element of
``args``: an array argument as nested lists of floats in its dtype's digits (``0.33166808``
for a float32, as JAX prints it: ``exhibits/digits.py``), a pytree argument as the list of its
leaves in ``jax.tree.leaves`` order (a dict's by sorted key, an OrderedDict's in insertion
order, nested containers flattened), each nested lists of floats; ``null`` for an argument not
differentiated; a leaf of more than 4,096 elements, which the page's check summarises, is
whole too: a CLI run sends its values after the check (``GradientValuesSent``, design 0060),
and ``fd_check`` says how it was compared), ``fd_check`` (JSON ``{"verdict", "headline",
"checked", "disagree_count", "disagreements": [...], "max_abs_err": ..., "max_rel_err": ...,
"compared": N, "not_compared": [...], "not_compared_count": M, "elements": E, "fd_sampled": S,
"float64_walk": bool, "fd_dtype": dtype, "equal_to_jax": bool, "leaves_not_sent": [paths]}``
against central differences in float64 (at ``S`` of the ``E`` differentiated elements): each
disagreement as ``{"path", "index", "gradient", "gradient_f64", "finite_difference", "kind",
"allowed", "dtype", "why"}``, each element left out as ``{"path", "index", "gradient",
"gradient_f64", "finite_difference", "why", "reason"}``, ``gradient`` in its dtype's digits;
the errors (the float64 walk, or the float32 walk when ``float64_walk`` is false, against the
differences) over the checked elements where the gradients are finite), ``attempts`` (JSON,
``jax.jit(jax.grad(f))`` and
``jax.grad(f)``: ``mode``, ``ok``, JAX's ``error_class``/``message``, the snippet ``line``, the
``explanation`` and ``fix``), ``linear_jaxpr`` (JAX's text of the jaxpr the walk runs
backwards) and ``output_leaf`` (only when ``f`` returns a pytree whose first leaf, a floating
scalar, is what was differentiated: the note the page shows, then the output's structure).
``SHOWN_ERRORS``: the attempts JAX refused in a run that finished
(``exhibits/shown.py``), and a ``disagree`` verdict as a finding (``GradientMismatch``): then
``jaxscope run`` exits 3 and writes the headline on stderr. Imports only the protocol."""

from __future__ import annotations

import base64
import itertools
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxscope.exhibit_api import EventBase

from exhibits.digits import in_dtype, shortest
from exhibits.shown import ShownError
from exhibits.transpose.events import (
    FdDisagreement,
    FdNotCompared,
    GradAttempted,
    GradientChecked,
    GradientValuesSent,
    LinearJaxprStaged,
)

_COMPUTATION = {"eager": "jax.grad(f)", "jit": "jax.jit(jax.grad(f))"}


def _checked(events: Sequence[EventBase]) -> GradientChecked | None:
    found = [e for e in events if isinstance(e, GradientChecked)]
    return found[-1] if found else None


def _gradient_in_dtype(c: GradientChecked, whole: dict[int, Any] | None = None) -> list[Any]:
    """``c.gradient`` with each leaf's numbers in its dtype's digits (``exhibits/digits.py``):
    the leaves' avals give the dtypes, one leaf argument as its array, a pytree as its leaves.
    ``whole``: the values of the leaves the check summarised, by leaf index, already in their
    dtype's digits (:func:`whole_leaves`); such a leaf is ``null`` without them."""
    whole = whole or {}
    out: list[Any] = []
    for i, g in enumerate(c.gradient if isinstance(c.gradient, list) else []):
        mine = [(k, leaf) for k, leaf in enumerate(c.leaves) if leaf.arg == i]
        if not mine or (g is None and not any(k in whole for k, _ in mine)):
            out.append(g)
            continue
        shown = [
            whole[k] if k in whole else in_dtype(leaf.gradient, leaf.aval.dtype) for k, leaf in mine
        ]
        one = len(mine) == 1 and mine[0][1].path == f"args[{i}]"
        out.append(shown[0] if one else shown)
    return out


def whole_leaves(c: GradientChecked, events: Sequence[EventBase]) -> dict[int, Any]:
    """The leaves of ``c`` that it summarised (``sent`` false), whole, from the run's
    :class:`GradientValuesSent` events (a run for the CLI sends them: design 0060), by leaf
    index: nested lists in the leaf's shape, each number the shortest decimal that rounds back
    to it in the leaf's dtype (numpy's printout, as :func:`exhibits.digits.in_dtype` writes a
    sent leaf's). A leaf whose parts do not add up to its size is left out (``null``)."""
    parts: dict[int, list[GradientValuesSent]] = {}
    for e in events:
        if isinstance(e, GradientValuesSent) and 0 <= e.leaf < len(c.leaves):
            parts.setdefault(e.leaf, []).append(e)
    out: dict[int, Any] = {}
    for index, sent in parts.items():
        leaf = c.leaves[index]
        chunks = sorted(sent, key=lambda e: e.start)
        pieces = [
            np.frombuffer(base64.b64decode(e.data), "<f8" if e.encoding == "float64" else "<f4")
            for e in chunks
        ]
        starts = [e.start for e in chunks]
        if [p.size for p in pieces] != [e.count for e in chunks] or starts != list(
            itertools.accumulate([0] + [p.size for p in pieces[:-1]])
        ):
            continue
        flat = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        if flat.size != leaf.size or flat.size != math.prod(leaf.aval.shape):
            continue
        out[index] = _digits(flat, leaf.aval.dtype).reshape(leaf.aval.shape).tolist()
    return out


def _digits(flat: Any, dtype: str) -> Any:
    """``flat`` (float32 or float64) as an object array of floats in ``dtype``'s digits: numpy's
    shortest printout of each value in its own dtype (Dragon4, what ``shortest`` searches for,
    vectorised: 2.4 M values in seconds, not minutes); NaN/Inf as ``"nan"``/``"inf"``."""
    if dtype in ("float16", "float32", "float64"):
        text = flat.astype(dtype).astype(str)
        values = [float(t) for t in text.tolist()]
    else:  # bfloat16, float8s: numpy prints no shortest text for them
        values = [shortest(float(v), dtype) for v in flat.tolist()]
    cells = np.empty(len(values), dtype=object)
    cells[:] = [v if math.isfinite(v) else _non_finite(v) for v in values]
    return cells


def _non_finite(v: float) -> str:
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _dtype_of(c: GradientChecked, path: str) -> str:
    return next((leaf.aval.dtype for leaf in c.leaves if leaf.path == path), "float64")


def _gradient(events: Sequence[EventBase]) -> str | None:
    c = _checked(events)
    return json.dumps(_gradient_in_dtype(c, whole_leaves(c, events))) if c else None


def _disagreement(c: GradientChecked, d: FdDisagreement) -> dict[str, Any]:
    return {**d.model_dump(), "gradient": in_dtype(d.gradient, _dtype_of(c, d.path))}


def _left_out(c: GradientChecked, n: FdNotCompared) -> dict[str, Any]:
    return {**n.model_dump(), "gradient": in_dtype(n.gradient, _dtype_of(c, n.path))}


def _verdict(events: Sequence[EventBase]) -> str | None:
    c = _checked(events)
    if c is None or c.verdict is None:
        return None
    first: dict[str, Any] | None = None
    if c.disagreements:
        first = _disagreement(c, c.disagreements[0])
    elif c.verdict == "incomplete" and c.not_compared:
        first = _left_out(c, c.not_compared[0])
    return json.dumps(
        {
            "ok": c.verdict == "agree",
            "verdict": c.verdict,
            "headline": c.headline,
            "checked": c.checked,
            "disagree_count": c.disagree_count,
            "not_compared_count": c.not_compared_count,
            "first": first,
        }
    )


def _fd_check(events: Sequence[EventBase]) -> str | None:
    c = _checked(events)
    if c is None:
        return None
    return json.dumps(
        {
            "verdict": c.verdict,
            "headline": c.headline,
            "checked": c.checked,
            "disagree_count": c.disagree_count,
            "disagreements": [_disagreement(c, d) for d in c.disagreements],
            "max_abs_err": c.max_abs_err,
            "max_rel_err": c.max_rel_err,
            "compared": c.compared,
            "not_compared": [_left_out(c, n) for n in c.not_compared],
            "not_compared_count": c.not_compared_count,
            "elements": c.elements,
            "fd_sampled": c.fd_sampled,
            "float64_walk": c.float64_walk,
            "fd_dtype": c.fd_dtype,
            "equal_to_jax": c.equal_to_jax,
            "leaves_not_sent": [leaf.path for leaf in c.leaves if not leaf.sent],
        }
    )


def _attempted(events: Sequence[EventBase]) -> list[GradAttempted]:
    return [e for e in events if isinstance(e, GradAttempted)]


def _attempts(events: Sequence[EventBase]) -> str | None:
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


def _linear(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, LinearJaxprStaged)]
    return found[-1].jaxpr.text if found else None


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
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
    if checked is not None and checked.verdict == "disagree":
        out.append(
            ShownError(
                error_class="GradientMismatch",
                message=checked.headline,
                computation="jax.grad(f), held to float64 finite differences",
                artefact="verdict",
                # a custom rule on the path is where the user can look: its return line
                line=next((r.source.line for r in checked.rules_on_path if r.source), None),
                kind="finding",
            )
        )
    return out


def _output_leaf(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, LinearJaxprStaged)]
    leaf = found[-1].output_leaf if found else None
    return f"{leaf.note}\noutput: {leaf.structure}" if leaf is not None else None


def output_leaf_note(events: Sequence[EventBase]) -> str | None:
    """The first-leaf rule's note (``jaxscope.grad_output``) when the run differentiated the
    first leaf of a pytree output, else None (the nan_finder exhibit's notes say it too)."""
    found = [e for e in events if isinstance(e, LinearJaxprStaged)]
    leaf = found[-1].output_leaf if found else None
    return leaf.note if leaf is not None else None


def _notes(events: Sequence[EventBase]) -> list[str]:
    note = output_leaf_note(events)
    return [note] if note is not None else []


ARTEFACTS = {
    "verdict": _verdict,
    "gradient": _gradient,
    "fd_check": _fd_check,
    "attempts": _attempts,
    "linear_jaxpr": _linear,
    "output_leaf": _output_leaf,
}
SHOWN_ERRORS = _shown_errors
NOTES = _notes
