"""jnp.roll along a sharded axis: the row that wraps around lives on another device (collective-permute)."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python: 8 CPU devices
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
spec = P("x", "y")


def f(a):
    return jnp.roll(a, 1, axis=0)


args = (jnp.arange(8 * 16, dtype=jnp.float32).reshape(8, 16),)
