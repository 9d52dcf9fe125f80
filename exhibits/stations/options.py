"""The stations exhibit's run options: ``target``, the machine the program is compiled for.

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class StationsOptions(WireModel):
    """``target``: None (or "host") compiles for the worker's own backend and runs the program
    there; "tpu-v5e" compiles for one chip of a TPU v5e (libtpu's offline topology ``v5e:2x2``,
    in a worker of its own: design 0067) and does not run it. ``xla_passes`` reads it too: the
    TPU compiler's own pass pipeline, and ``pallas``: each kernel lowered through Mosaic (design
    0073)."""

    target: Literal["host", "tpu-v5e"] | None = Field(
        # A choice of machine, not of program: picking another example keeps it (the page's
        # example picker, frontend/src/example-options.ts) unless the example sets ``target``.
        json_schema_extra={
            "x-exhibits": ["stations", "xla_passes", "pallas"],
            "x-kept-across-examples": True,
        },
        default=None,
        description="stations, xla_passes, pallas: compile for this machine (host) or for a "
        "TPU v5e (compile only; pallas: its kernels through Mosaic)",
    )
