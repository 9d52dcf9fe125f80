"""The tracing exhibit's run option: ``calls``, the extra calls of the jitted function after the
first (the view's "call again" control, ``jaxscope run tracing --calls JSON``).

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class CallSpec(WireModel):
    """One extra call of the jitted function in the tracing exhibit's "call again" control.

    ``change``: ``same`` re-uses ``args``; ``shape`` grows axis 0 of every array argument by one
    (scalars become 1-vectors); ``dtype`` casts floating arguments to float16 and integer ones to
    int16; ``expr`` evaluates ``expr`` (a Python expression giving an args tuple) in the snippet.
    """

    change: Literal["same", "shape", "dtype", "expr"] = "same"
    expr: str | None = None


class TracingOptions(WireModel):
    """``calls``: extra calls after the first, each a :class:`CallSpec`."""

    calls: list[CallSpec] = Field(
        json_schema_extra={"x-exhibits": ["tracing"]},
        default_factory=list,
        max_length=16,
        description="tracing: extra calls after the first, as JSON "
        '(e.g. [{"change": "shape"}, {"change": "expr", "expr": "(jnp.ones(4),)"}])',
    )
