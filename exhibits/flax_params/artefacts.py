"""The flax_params exhibit's ``--print`` artefacts (``jaxscope run flax_params FILE --print
params``):

- ``params``: a JSON list, one object per parameter in the order the model created them:
  ``{"path": ["Dense_0", "kernel"], "shape": [4, 16], "dtype": "float32", "initializer":
  "jax.nn.initializers.lecun_normal()", "key": [3043437727, 3662875008]}`` (``key`` is
  ``jax.random.key_data`` of the key the parameter was given, as ints; null when traced).
- ``unused``: a JSON list of the paths of the parameters ``apply`` never reads (their jaxpr
  invars reach no output).

``SHOWN_ERRORS``: the error Flax raised on the model in ``init``/``apply`` (the
branch-built-submodule bug), and, as a finding, parameters that exist but that ``apply`` never
reads (``UnusedParams``): ``jaxscope run`` exits 3 for either.

Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from exhibits.shown import ShownError

from .events import FlaxErrorRaised, ParamCreated, ParamsApplied


def _params(events: Sequence[EventBase]) -> str | None:
    created = [e for e in events if isinstance(e, ParamCreated)]
    if not created and not any(isinstance(e, (ParamsApplied, FlaxErrorRaised)) for e in events):
        return None
    return json.dumps(
        [
            {
                "path": e.path,
                "shape": e.aval.shape,
                "dtype": e.aval.dtype,
                "initializer": e.initializer,
                "key": e.key,
            }
            for e in created
        ]
    )


def _unused(events: Sequence[EventBase]) -> str | None:
    applied = [e for e in events if isinstance(e, ParamsApplied)]
    return json.dumps(applied[-1].unused) if applied else None


def _shown_errors(events: Sequence[EventBase]) -> list[ShownError]:
    out: list[ShownError] = []
    for e in events:
        if isinstance(e, FlaxErrorRaised):
            out.append(
                ShownError(
                    error_class=e.error_class,
                    message=e.message.splitlines()[0],
                    computation=f"model.{e.phase}(...)",
                    artefact="params",
                    line=e.line,
                    note="a submodule built in one branch only: build it in every branch, or"
                    " create it in setup",
                )
            )
        elif isinstance(e, ParamsApplied) and e.unused:
            paths = ", ".join("/".join(p) for p in e.unused)
            out.append(
                ShownError(
                    error_class="UnusedParams",
                    message=f"init created parameters that apply never reads: {paths}",
                    computation=e.call,
                    artefact="unused",
                    note="no output depends on them; often init and apply built different"
                    " submodules (a branch on an argument), so apply's layers read other"
                    " layers' parameters under shifted names",
                    kind="finding",
                )
            )
    return out


ARTEFACTS = {"params": _params, "unused": _unused}
SHOWN_ERRORS = _shown_errors
