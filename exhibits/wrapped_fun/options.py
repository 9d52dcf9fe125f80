"""The wrapped_fun exhibit's run option: ``transform``, the JAX transformation the probe applies
to the snippet's ``f`` while it watches linear_util's ``WrappedFun`` stacks.

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import WireModel
from pydantic import Field

# What the probe calls (exhibits/wrapped_fun/probe.py, ``CALLS``). The first four build
# WrappedFun stacks around the user's functions in jax 0.10.2; the others trace f directly.
WrappedFunTransform = Literal[
    "vmap",
    "custom_vjp",
    "custom_jvp",
    "linear_transpose",
    "jit",
    "grad",
    "jvp",
    "vjp",
    "make_jaxpr",
    "checkpoint",
]


class WrappedFunOptions(WireModel):
    """``transform``: ``None`` = the snippet's own ``transform``, else ``vmap``."""

    transform: WrappedFunTransform | None = Field(
        json_schema_extra={"x-exhibits": ["wrapped_fun"]},
        default=None,
        description="wrapped_fun: the transformation applied to f (vmap, custom_vjp, custom_jvp, "
        "linear_transpose, jit, grad, jvp, vjp, make_jaxpr, checkpoint)",
    )
