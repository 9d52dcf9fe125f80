"""A rank-3 array on a 2 x 2 x 2 mesh: each device holds a (2, 3, 2) block (JAX's own printer stops at 2-D)."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python: 8 CPU devices
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((2, 2, 2), ("x", "y", "z"), axis_types=(AxisType.Auto,) * 3)
spec = P("x", None, ("y", "z"))  # axis 2 split over y and z together (4 ways); nothing on axis 1


def f(a):
    return jnp.tanh(a).mean(axis=2)


args = (jnp.arange(4 * 3 * 8, dtype=jnp.float32).reshape(4, 3, 8),)
