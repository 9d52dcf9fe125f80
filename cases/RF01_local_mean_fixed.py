"""The fix of RF01_local_mean_broken.py: the global mean is the mean of the blocks' means
(``jax.lax.pmean`` over the sharded axis), so every device subtracts the batch's mean.

Report: https://docs.jax.dev/en/latest/notebooks/shard_map.html ("Collectives"), jax-ml/jax#14645.
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
    return x - jax.lax.pmean(x.mean(), "x")  # equal blocks: the mean of means is the mean


in_specs = (P("x", None),)
out_specs = P("x", None)
args = (jnp.arange(24.0).reshape(8, 3),)


def reference(x):  # the same computation without shard_map
    return x - x.mean()
