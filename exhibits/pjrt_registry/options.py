"""The pjrt_registry exhibit's run options: ``pjrt_device``, the ``PJRT_DEVICE`` string to try,
and ``dynamic_plugins``, the dynamic-plugin switch.

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class PjrtRegistryOptions(WireModel):
    """``None`` = the snippet's ``pjrt_device`` / ``dynamic_plugins`` (``"CPU"``/``"auto"`` when
    it sets none). ``dynamic_plugins``: ``on`` sets ``PJRT_DYNAMIC_PLUGINS=1`` (what torch_xla's
    import does by default), ``off`` unsets it (what ``XLA_REGISTER_INSTALLED_PLUGINS=0``
    leaves), ``auto`` leaves it as the import did."""

    pjrt_device: str | None = Field(
        json_schema_extra={"x-exhibits": ["pjrt_registry"]},
        default=None,
        max_length=200,
        description="pjrt_registry: the PJRT_DEVICE string to create the client with",
    )
    dynamic_plugins: Literal["auto", "on", "off"] | None = Field(
        json_schema_extra={"x-exhibits": ["pjrt_registry"]},
        default=None,
        description="pjrt_registry: the dynamic-plugin switch (auto, on, off)",
    )
