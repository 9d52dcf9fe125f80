"""A matmul whose contracting dimension is sharded: each device multiplies its slices, an all-reduce sums them."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python: 8 CPU devices
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
spec = P("x", "y")  # a: rows over 'x', columns (the contracting dimension) over 'y'

w = jax.device_put(jnp.ones((16, 8), jnp.float32), NamedSharding(mesh, P("y", None)))


def f(a, w):
    return a @ w  # a's columns and w's rows are both split over 'y'


args = (jnp.arange(8 * 16, dtype=jnp.float32).reshape(8, 16), w)
