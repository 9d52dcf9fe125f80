"""The tf_bridge exhibit's ``--print`` artefacts: ``tf_graph`` (the concrete function's
``GraphDef`` text, the module bytes left out), ``stablehlo`` (the ``XlaCallModule``'s module
as text) and ``roundtrip`` (JSON: the largest absolute difference per output and gradient,
TensorFlow against JAX, for jax2tf, the SavedModel and tf2jax)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.exhibit_api import EventBase

from .events import (
    Jax2tfOutputsCompared,
    OutputCompared,
    SavedModelLoaded,
    Tf2jaxConverted,
    TfGraphTraced,
    XlaCallModuleRead,
)


def _tf_graph(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, TfGraphTraced)]
    return found[-1].graph_def if found else None


def _stablehlo(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, XlaCallModuleRead)]
    return found[-1].stablehlo if found else None


def _diffs(rows: Sequence[OutputCompared]) -> dict[str, float]:
    return {r.path: r.max_abs_diff for r in rows}


def _roundtrip(events: Sequence[EventBase]) -> str | None:
    table: dict[str, dict[str, float]] = {}
    for e in events:
        if isinstance(e, Jax2tfOutputsCompared):
            table["jax2tf_outputs"] = _diffs(e.outputs)
            table["jax2tf_gradients"] = _diffs(e.gradients)
        elif isinstance(e, SavedModelLoaded):
            table["saved_model_outputs"] = _diffs(e.compared)
        elif isinstance(e, Tf2jaxConverted):
            table["tf2jax_outputs"] = _diffs(e.outputs)
            table["tf2jax_gradients"] = _diffs(e.gradients)
    return json.dumps(table, indent=2) if table else None


ARTEFACTS = {"tf_graph": _tf_graph, "stablehlo": _stablehlo, "roundtrip": _roundtrip}
