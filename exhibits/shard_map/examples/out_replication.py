"""The body returns a value that still varies over 'y' (no psum), but out_specs P('x', None)
claims it is the same on both 'y' devices. With check_vma=True, JAX refuses: the varying
manual axes of the output ({V:(x,y)}) include 'y', which out_specs leaves out.
Fix: psum over 'y' in the body, or out_specs P('x', 'y')."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def f(block):  # f32[2, 2] varying over x and y
    return block.sum(axis=1, keepdims=True)  # still varying over y


in_specs = (P("x", "y"),)
out_specs = P("x", None)
args = (jnp.arange(32.0).reshape(8, 4),)

if __name__ == "__main__":
    print(jax.jit(jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs))(*args))
