"""Sum over a sharded axis: each device sums its own rows, then an all-reduce adds the partial sums."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python: 8 CPU devices
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

# 8 devices named as a 2 x 4 grid. make_mesh's default axis type is Explicit; Auto lets the
# partitioner (GSPMD/Shardy) choose every intermediate sharding itself.
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
spec = P("x", "y")  # rows split over 'x' (2 ways), columns over 'y' (4 ways)


def f(a):
    return a.sum(axis=0)  # axis 0 is split over 'x': partial sums must be combined


args = (jnp.arange(8 * 16, dtype=jnp.float32).reshape(8, 16),)
