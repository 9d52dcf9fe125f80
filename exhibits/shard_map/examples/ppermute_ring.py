"""A ring shift: each device along 'x' sends its block to the next one (ppermute), so the
global result is the array rolled by one block along axis 0."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)

N = 4  # devices along 'x'


def f(block):  # f32[2, 4]
    return jax.lax.ppermute(block, "x", perm=[(i, (i + 1) % N) for i in range(N)])


in_specs = (P("x", None),)
out_specs = P("x", None)
args = (jnp.arange(32.0).reshape(8, 4),)


def reference(a):
    return jnp.roll(a, 2, axis=0)  # one block = 8 / 4 = 2 rows


if __name__ == "__main__":
    print(jax.jit(jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs))(*args))
