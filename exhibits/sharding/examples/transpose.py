"""A transpose that must keep the P('x', 'y') layout: blocks move between devices (all-to-all, collective-permute)."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python: 8 CPU devices
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
spec = P("x", "y")


def f(a):
    # Without the constraint the partitioner just swaps the spec to P('y', 'x'): no collective.
    return jax.lax.with_sharding_constraint(a.T, NamedSharding(mesh, P("x", "y")))


args = (jnp.arange(16 * 16, dtype=jnp.float32).reshape(16, 16),)
