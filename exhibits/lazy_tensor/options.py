"""The lazy_tensor exhibit's run options: ``eager_mode``, whether ``f``'s line-by-line run uses
torch_xla's eager mode (``torch_xla.experimental.eager_mode(True)``: every op is compiled and
run at once, a cut after every op); ``torchax``, whether the same ``f`` is also traced by
torchax (PyPI) to a jaxpr and StableHLO, beside torch_xla's IR and HLO (design 0042).

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class LazyTensorOptions(WireModel):
    """``None`` or ``False``: lazy (torch_xla's default); ``True``: eager mode for the
    line-by-line run (the graph, its hash and the experiments stay lazy: eager mode leaves no
    graph to show)."""

    eager_mode: bool | None = Field(
        json_schema_extra={"x-exhibits": ["lazy_tensor"]},
        default=None,
        description="lazy_tensor: run f line by line in torch_xla's eager mode (a cut per op)",
    )
    torchax: bool | None = Field(
        json_schema_extra={"x-exhibits": ["lazy_tensor"]},
        default=None,
        description="lazy_tensor: also trace f with torchax (jaxpr, StableHLO) beside torch_xla",
    )
