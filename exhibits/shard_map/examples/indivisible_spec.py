"""Six rows split over the 4 devices of 'x': 4 does not divide 6, and shard_map says so
before the body is ever traced. Fix: pad to 8 rows, or shard rows over 'y' (size 2)."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def f(block):
    return block * 2.0


in_specs = (P("x", None),)
out_specs = P("x", None)
args = (jnp.ones((6, 4)),)

if __name__ == "__main__":
    print(jax.jit(jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs))(*args))
