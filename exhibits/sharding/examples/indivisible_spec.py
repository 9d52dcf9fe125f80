"""Shape error: 6 rows cannot be split 4 ways (IndivisibleError)."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python: 8 CPU devices
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
spec = P("y")  # 'y' has 4 devices, axis 0 has 6 rows


def f(a):
    return a.sum(axis=0)


args = (jnp.zeros((6, 16), jnp.float32),)
