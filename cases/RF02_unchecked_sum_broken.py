"""A per-device partial sum returned as if it were replicated, with the replication check off.

Report: the shard_map docs on ``check_vma=False`` (formerly ``check_rep``): with the check off,
an ``out_specs`` of ``P()`` for a value that still varies over the mesh is not refused, and the
result is one device's block (https://docs.jax.dev/en/latest/notebooks/shard_map.html, "Tracking
how values vary over manual mesh axes"; jax-ml/jax#19175 shows users turning the check off).
The user meant the sum of the whole array, forgot the ``psum``, and got a quarter of it.
"""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = flags + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


def f(x):  # one device's block: f32[4]
    return jnp.sum(x)  # a partial sum: psum(..., "x") is missing


in_specs = (P("x"),)
out_specs = P()
check_vma = False
args = (jnp.arange(16.0),)


def reference(x):  # what the user meant
    return jnp.sum(x)
