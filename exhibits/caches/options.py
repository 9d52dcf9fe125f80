"""The caches exhibit's run option: ``preset``, the named call sequence (or loop) it runs on the
snippet's ``f``/``args`` to show which cache layer each call hits.

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class CachesOptions(WireModel):
    """``preset``: a named call sequence or loop (``None`` = the snippet's own ``calls``, or its
    driver loop)."""

    preset: str | None = Field(
        json_schema_extra={"x-exhibits": ["caches"]},
        default=None,
        max_length=200,
        description="caches: a named call sequence on the snippet's f/args "
        "(e.g. same, new_shape, persistent)",
    )
