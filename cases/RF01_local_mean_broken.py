"""A shard_map body that normalises by the mean of its own block, not of the whole array.

Report: the JAX shard_map tutorial's warning that inside ``shard_map`` the body "sees only the
local block" and must use collectives for global reductions
(https://docs.jax.dev/en/latest/notebooks/shard_map.html, "Collectives"), and jax-ml/jax#14645
("[shard-map] move the divide into the shmap body"), where a mean over sharded data was taken
per shard. Centering rows of a batch split over 4 devices with ``x - x.mean()`` subtracts each
device's own mean: JAX accepts the program (no collective is missing from its point of view)
and returns a different array than the same function without shard_map.
"""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = flags + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


def f(x):  # one device's block: f32[2, 3]
    return x - x.mean()  # the block's mean, not the batch's


in_specs = (P("x", None),)
out_specs = P("x", None)
args = (jnp.arange(24.0).reshape(8, 3),)
