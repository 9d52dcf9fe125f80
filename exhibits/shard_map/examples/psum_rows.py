"""Row sums of an (8, 4) array on a 4 x 2 mesh: each device sums its 2 x 2 block's rows, then
psum over 'y' adds the two column halves, so every row block ends up replicated over 'y'."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def f(block):  # one device's block: f32[2, 2], varying over x and y
    partial = block.sum(axis=1, keepdims=True)  # f32[2, 1], still varying over x and y
    return jax.lax.psum(partial, "y")  # f32[2, 1], varying over x only


in_specs = (P("x", "y"),)
out_specs = P("x", None)  # replicated over y: psum made it so
args = (jnp.arange(32.0).reshape(8, 4),)


def reference(a):  # the same computation without shard_map
    return a.sum(axis=1, keepdims=True)


if __name__ == "__main__":
    print(jax.jit(jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs))(*args))
