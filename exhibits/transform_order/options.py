"""The transform_order exhibit's run option: ``stack``, the chips of transforms it stacks on
``f``, and ``TransformName``, the transforms a chip can be. (The axes of its ``vmap`` chip are
``in_axes``, defined once with the vmap exhibit's options.)

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from typing import Literal

from jaxscope.exhibit_api import WireModel
from pydantic import Field

# The transforms the transform_order exhibit stacks (outermost first).
TransformName = Literal[
    "jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "hessian", "jvp", "vjp"
]


class TransformOrderOptions(WireModel):
    """``stack``: the chips, outermost first (``None`` = the snippet's ``stack`` or its
    default)."""

    stack: list[TransformName] | None = Field(
        json_schema_extra={"x-exhibits": ["transform_order"]},
        default=None,
        max_length=8,
        description="transform_order: the transforms, outermost first (e.g. vmap,grad)",
    )
