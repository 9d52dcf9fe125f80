"""The recompile_hunt exhibit's run option: ``steps``, how many steps of the snippet's loop it
runs while it watches for recompiles.

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class RecompileHuntOptions(WireModel):
    """``steps``: the loop's step count, given to a driver ``f(n)`` as ``n`` (``None`` = the
    snippet's own ``args``)."""

    steps: int | None = Field(
        json_schema_extra={"x-exhibits": ["recompile_hunt"]},
        default=None,
        ge=1,
        le=200,
        description="recompile_hunt: the number of loop steps",
    )
