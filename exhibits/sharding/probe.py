"""The sharding exhibit's probe (being built)."""

from __future__ import annotations

from jaxscope.sandbox.probe_api import ProbeContext


def run(ctx: ProbeContext) -> None:
    """Not built yet."""
    raise NotImplementedError("the sharding exhibit is being built")
