"""The vmap exhibit's run options: ``in_axes`` and ``out_axes``, the axes ``jax.vmap`` maps, as
the view's axis controls set them. ``in_axes`` is read by transform_order too (the axes of its
``vmap`` chip); it is defined here, once, and names both exhibits.

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class VmapOptions(WireModel):
    """``in_axes``/``out_axes``: Python expressions evaluated in the sandbox (``None`` = the
    snippet's own ``in_axes``/``out_axes``, else 0)."""

    in_axes: str | None = Field(
        json_schema_extra={"x-exhibits": ["vmap", "transform_order"]},
        default=None,
        max_length=2000,
        description="vmap/transform_order: in_axes as a Python expression",
    )
    out_axes: str | None = Field(
        json_schema_extra={"x-exhibits": ["vmap"]},
        default=None,
        max_length=2000,
        description="vmap: out_axes as a Python expression",
    )
