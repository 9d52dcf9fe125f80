"""The fix of RF02_unchecked_sum_broken.py: ``jax.lax.psum`` adds the devices' partial sums, so
the value really is replicated and ``out_specs=P()`` is right (the check can stay on).

Report: https://docs.jax.dev/en/latest/notebooks/shard_map.html, jax-ml/jax#19175.
"""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = flags + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


def f(x):  # one device's block: f32[4]
    return jax.lax.psum(jnp.sum(x), "x")


in_specs = (P("x"),)
out_specs = P()
args = (jnp.arange(16.0),)


def reference(x):
    return jnp.sum(x)
