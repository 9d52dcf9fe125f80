"""The device exhibits' run options: ``mesh`` and ``spec`` (read by sharding and shard_map; the
mesh and the PartitionSpec(s), defined here once and naming both exhibits) and ``array_shape``
(sharding's array).

One base of :class:`jaxscope.protocol.RunOptions`, which composes every exhibit's options; it
imports only pydantic and :mod:`jaxscope.wire` (the protocol imports it while it is defined).
"""

from __future__ import annotations

from jaxscope.exhibit_api import WireModel
from pydantic import Field


class ShardingOptions(WireModel):
    """``mesh``/``spec``/``array_shape``: Python expressions evaluated in the snippet's
    namespace, in the sandbox (``None`` = the snippet's ``mesh``/``spec``/``args[0]``); an
    ``array_shape`` replaces ``args[0]`` by ``arange`` of that shape in its dtype."""

    mesh: str | None = Field(
        json_schema_extra={"x-exhibits": ["sharding", "shard_map"]},
        default=None,
        max_length=2000,
        description="sharding/shard_map: the mesh as a Python expression",
    )
    spec: str | None = Field(
        json_schema_extra={"x-exhibits": ["sharding", "shard_map"]},
        default=None,
        max_length=2000,
        description="sharding/shard_map: the PartitionSpec(s) as a Python expression",
    )
    array_shape: str | None = Field(
        json_schema_extra={"x-exhibits": ["sharding"]},
        default=None,
        max_length=200,
        description="sharding: the array's shape as a Python expression (e.g. (8, 16))",
    )
