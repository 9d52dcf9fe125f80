"""The cache_key exhibit's run options: ``perturb``, the one ingredient of the persistent cache
key it changes, and ``xla_flags``, the XLA flags it filters as JAX does for the key.

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class CacheKeyOptions(WireModel):
    """``perturb``: the one changed ingredient; ``xla_flags``: flags to filter as JAX filters
    them for the key."""

    perturb: str | None = Field(
        json_schema_extra={"x-exhibits": ["cache_key"]},
        default=None,
        max_length=200,
        description="cache_key: the one ingredient of the cache key to change",
    )
    xla_flags: str | None = Field(
        json_schema_extra={"x-exhibits": ["cache_key"]},
        default=None,
        max_length=2000,
        description="cache_key: XLA flags, filtered as JAX filters them for the key",
    )
