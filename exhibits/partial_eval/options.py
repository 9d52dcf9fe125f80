"""The partial_eval exhibit's run option: ``known``, its known/unknown toggle (which inputs of
the JVP jaxpr partial evaluation treats as known).

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class PartialEvalOptions(WireModel):
    """``known``: one flag per input of the JVP jaxpr (primals then tangents, flattened);
    ``None`` = primals known, tangents unknown."""

    known: list[bool] | None = Field(
        json_schema_extra={"x-exhibits": ["partial_eval"]},
        default=None,
        max_length=4096,
        description="partial_eval: known (true) or unknown (false) per input of the JVP jaxpr, "
        "primals then tangents, as JSON (e.g. [true, false])",
    )
