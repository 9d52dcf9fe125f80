"""in_specs names a mesh axis 'z' the mesh does not have (its axes are 'x' and 'y')."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def f(block):
    return block * 2.0


in_specs = (P("x", "z"),)
out_specs = P("x", "y")
args = (jnp.ones((8, 4)),)

if __name__ == "__main__":
    print(jax.jit(jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs))(*args))
