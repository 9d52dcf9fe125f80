"""all_gather over 'y': each device gets back the full rows of its row block. all_gather's
output still varies over 'y' for the type system, so out_specs must keep 'y' varying (tiled)
or use all_gather_invariant; here the result is written back tiled over 'y'."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def f(block):  # f32[2, 2]
    rows = jax.lax.all_gather(block, "y", axis=1, tiled=True)  # f32[2, 4]: full rows
    return rows * 2.0


in_specs = (P("x", "y"),)
out_specs = P("x", "y")  # each y-device writes its copy: the global result is (8, 8)
args = (jnp.arange(32.0).reshape(8, 4),)


def reference(a):
    return jnp.concatenate([a * 2.0, a * 2.0], axis=1)


if __name__ == "__main__":
    print(jax.jit(jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs))(*args))
