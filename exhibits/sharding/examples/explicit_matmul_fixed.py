"""Explicit mode with the out_sharding fix: the types carry shardings (f32[8@x,16@y]) and the all-reduce is asked for."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python: 8 CPU devices
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

mesh = jax.make_mesh((2, 4), ("x", "y"))  # axis_types default: (Explicit, Explicit)
spec = P("x", "y")

w = jax.device_put(jnp.ones((16, 8), jnp.float32), NamedSharding(mesh, P("y", None)))


def f(a, w):
    return jnp.matmul(a, w, out_sharding=NamedSharding(mesh, P("x", None)))


args = (jnp.arange(8 * 16, dtype=jnp.float32).reshape(8, 16), w)
