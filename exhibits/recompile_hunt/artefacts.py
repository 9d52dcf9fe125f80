"""The recompile_hunt exhibit's ``--print`` table: ``recompiles`` is JSON step -> cause for the
steps that compiled. Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventModel, TrainingStepObserved


def _recompiles(events: Sequence[EventModel]) -> str | None:
    steps = [e for e in events if isinstance(e, TrainingStepObserved)]
    return json.dumps({str(s.step): s.cause for s in steps if s.compiled})


ARTEFACTS = {"recompiles": _recompiles}
