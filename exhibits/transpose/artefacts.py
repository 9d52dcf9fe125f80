"""The transpose exhibit's ``--print`` table: ``gradient`` (JSON, one entry per element of
``args``: an array argument as nested lists of floats, a pytree argument as the list of its
leaves in ``jax.tree.leaves`` order (a dict's by sorted key, an OrderedDict's in insertion
order, nested containers flattened), each nested lists of floats; ``null`` for an argument not
differentiated), ``fd_check``
(JSON ``{"max_abs_err": ..., "max_rel_err": ...}`` against central differences in float64) and
``linear_jaxpr`` (JAX's text of the jaxpr the walk runs backwards). Imports only the protocol."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventModel, GradientChecked, LinearJaxprStaged


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
    return json.dumps({"max_abs_err": c.max_abs_err, "max_rel_err": c.max_rel_err})


def _linear(events: Sequence[EventModel]) -> str | None:
    found = [e for e in events if isinstance(e, LinearJaxprStaged)]
    return found[-1].jaxpr.text if found else None


ARTEFACTS = {"gradient": _gradient, "fd_check": _fd_check, "linear_jaxpr": _linear}
