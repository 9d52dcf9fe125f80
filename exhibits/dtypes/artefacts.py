"""The dtypes exhibit's ``--print`` table: ``result_type`` is JSON ``{"x64_off": ..., "x64_on":
...}``, each ``{"dtype", "weak", "code"}`` (what ``jax.dtypes.result_type(*leaves,
return_weak_type_flag=True)`` gave); ``table`` is the promotion table with x64 off and with x64
on, as text (rows and columns in the order of JAX's type promotion docs; ``i*``/``f*``/``c*``
the weak types). Imports only the protocol and this exhibit's events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from jaxscope.protocol import EventBase

from .events import PromotionTabulated, ResultTypeComputed


def _result_type(events: Sequence[EventBase]) -> str | None:
    found = [e for e in events if isinstance(e, ResultTypeComputed)]
    if not found or not found[-1].answers:
        return None
    return json.dumps(
        {
            ("x64_on" if a.x64 else "x64_off"): {"dtype": a.dtype, "weak": a.weak, "code": a.code}
            for a in found[-1].answers
        }
    )


def _table(events: Sequence[EventBase]) -> str | None:
    tables = [e for e in events if isinstance(e, PromotionTabulated)]
    if not tables:
        return None
    blocks = []
    for t in tables:
        codes = [n.code for n in t.types]
        width = max(len(c) for c in codes) + 1
        lines = [f"# jnp.promote_types, x64 {'on' if t.x64 else 'off'}"]
        lines.append(" " * width + "".join(c.rjust(width) for c in codes))
        for code, row in zip(codes, t.cells, strict=True):
            lines.append(code.rjust(width) + "".join(c.join.code.rjust(width) for c in row))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


ARTEFACTS = {"result_type": _result_type, "table": _table}
