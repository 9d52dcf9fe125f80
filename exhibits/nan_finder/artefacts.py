"""The nan_finder exhibit's ``--print`` table: ``first_nan`` is ``null`` when the gradient is
finite, else JSON with what the page says about the first backward-pass step whose cotangent
became NaN or Inf:

- ``primitive``: the primal primitive whose derivative produced it (e.g. ``sqrt``; the linear
  eqn's primitive when none is known), ``line`` its user line: the two keys ``first_nan`` always
  had, kept as they were; when the step is inside a library function's body (no user line of
  its own), ``line`` is the line where the user called the library and ``library_call`` names
  that call (``corrcoef``), else ``library_call`` is ``null``;
- ``kind`` (``nan``/``inf``), ``linear_primitive`` (the linear eqn that wrote it, e.g. ``mul``),
  ``primal_primitive`` (``null`` when not known), ``step`` (the top-level step of the walk) and
  ``inner_step`` (the step inside the innermost call, ``null`` at top level);
- ``inside``: the calls the finder descended into, outermost first, each ``{"primitive",
  "name", "line", "iteration"}`` (``iteration``: a scan's, in forward order);
- ``forward_nonfinite`` (the primal value already NaN/Inf; ``null``: not known),
  ``residuals_nonfinite`` (the residuals the rule read that hold NaN/Inf, e.g. ``residual b``),
  ``inputs_nonfinite`` (arguments that came in NaN/Inf) and ``debug_nans`` (what ``jax.grad``
  raises under ``jax_debug_nans``, ``null``: nothing);
- ``seed``: the output cotangent the walk started from (``"1.0"``, or ``"ones(f32[3]): ..."``
  for a non-scalar output: then the gradient is that of ``sum(f)``).

``hidden``: ``null`` when ``f``'s forward pass makes no NaN/Inf that its outputs hide, else JSON
``{"origin": {"index", "primitive", "line", "text", "kind"}, "hider": {...} or null, "count"}``
(``ForwardNonfiniteHidden``: where the value was born, the first eqn that dropped it).

``SHOWN_ERRORS`` (``exhibits/shown.py``): a gradient with a NaN/Inf (``NonfiniteGradient``) and a
hidden forward NaN/Inf (``HiddenNonfinite``) are findings: ``jaxscope run`` exits 3 and says on
stderr where each was made.

``output_leaf``: only when ``f`` returns a pytree whose first leaf, a floating scalar (a train
step's loss), is what was differentiated: the note the page shows, then the output's structure.

``NOTES``: what was differentiated, when it is not ``f`` as given (``jaxscope run`` prints each on
stderr, as the transpose exhibit's): the walk's seed cotangent for a non-scalar output (the
gradient of ``sum(f)``), the first-leaf rule's note for a pytree output.

Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.nan_finder.events import ForwardEqnView, ForwardNonfiniteHidden, NonfiniteFound
from exhibits.shown import ShownError
from exhibits.transpose.artefacts import output_leaf_note
from exhibits.transpose.events import LinearJaxprStaged


def _first_nan(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, NonfiniteFound)]
    if not found:
        return None
    e = found[-1]
    if not e.found:
        return "null"
    return json.dumps(
        {
            "primitive": e.primal_primitive or e.primitive,
            "line": e.source.line if e.source else None,
            "library_call": e.library_call,
            "kind": e.kind,
            "linear_primitive": e.primitive,
            "primal_primitive": e.primal_primitive,
            "step": e.step,
            "inner_step": e.inner_step,
            "inside": [
                {
                    "primitive": c.primitive,
                    "name": c.name,
                    "line": c.source.line if c.source else None,
                    "iteration": c.iteration,
                }
                for c in e.inside
            ],
            "forward_nonfinite": e.forward_nonfinite,
            "residuals_nonfinite": [
                v.label for v in e.values_in if v.value.role == "residual" and v.nonfinite_count > 0
            ],
            "inputs_nonfinite": e.inputs_nonfinite,
            "debug_nans": e.debug_nans,
            "seed": e.seed,
        }
    )


def _output_leaf(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, LinearJaxprStaged)]
    leaf = found[-1].output_leaf if found else None
    return f"{leaf.note}\noutput: {leaf.structure}" if leaf is not None else None


def _last_hidden(events: Sequence[EventBase]) -> ForwardNonfiniteHidden | None:
    found = [e for e in events if isinstance(e, ForwardNonfiniteHidden)]
    return found[-1] if found else None


def _eqn_json(e: ForwardEqnView) -> dict[str, object]:
    line = e.source.line if e.source else None
    return {
        "index": e.index,
        "primitive": e.primitive,
        "line": line,
        "text": e.text,
        "kind": e.kind,
    }


def _hidden(events: Sequence[EventBase]) -> str | None:
    if not any(isinstance(e, NonfiniteFound) for e in events):
        return None  # the run did not get that far
    h = _last_hidden(events)
    if h is None:
        return "null"
    return json.dumps(
        {
            "origin": _eqn_json(h.origin),
            "hider": _eqn_json(h.hider) if h.hider else None,
            "count": h.count,
        }
    )


def _at(e: ForwardEqnView) -> str:
    what = e.text if " = " not in e.text else e.primitive  # a call reads "jit _where"
    return f"{what} at line {e.source.line}" if e.source else f"{what} (eqn {e.index})"


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    out: list[ShownError] = []
    found = [e for e in events if isinstance(e, NonfiniteFound)]
    h = _last_hidden(events)
    if found and found[-1].found:
        e = found[-1]
        where = f"{e.primal_primitive or e.primitive}"
        if e.library_call:
            where += f" inside {e.library_call}"
        out.append(
            ShownError(
                error_class="NonfiniteGradient",
                message=f"the gradient holds {'NaN' if e.kind == 'nan' else 'Inf'}: the backward"
                f" pass first wrote one at the derivative of {where}",
                computation="jax.grad(f), walked backwards eqn by eqn",
                artefact="first_nan",
                line=e.source.line if e.source else None,
                kind="finding",
            )
        )
    if h is not None:
        hider = f", dropped by {_at(h.hider)}" if h.hider else ""
        kind = "NaN" if h.origin.kind == "nan" else "Inf"
        out.append(
            ShownError(
                error_class="HiddenNonfinite",
                message=f"the forward pass made {h.count} {kind} value(s) at"
                f" {_at(h.origin)}{hider}; f's outputs do not show them, but its gradient"
                " goes through them",
                computation="f(*args), evaluated eqn by eqn",
                artefact="hidden",
                line=h.origin.source.line if h.origin.source else None,
                kind="finding",
                note="compute the risky op on safe inputs (the double where: "
                "jnp.where(ok, op(jnp.where(ok, x, safe)), fallback))",
            )
        )
    return out


def _notes(events: Sequence[EventBase]) -> list[str]:
    leaf = output_leaf_note(events)
    notes = [leaf] if leaf is not None else []
    found = [e for e in events if isinstance(e, NonfiniteFound)]
    if found and found[-1].seed != "1.0":
        notes.append(f"the walk's seed cotangent is {found[-1].seed}")
    return notes


ARTEFACTS = {"first_nan": _first_nan, "hidden": _hidden, "output_leaf": _output_leaf}
NOTES = _notes
SHOWN_ERRORS = _shown_errors
