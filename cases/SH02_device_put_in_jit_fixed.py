"""The fix of SH02_device_put_in_jit_broken.py (jax-ml/jax#6221,
https://github.com/jax-ml/jax/issues/6221): inside ``jit``, say the layout with
``jax.lax.with_sharding_constraint``; the compiled program keeps it.
"""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = flags + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((4,), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))


@jax.jit
def f(x):
    h = jnp.tanh(x * 2.0)
    return jax.lax.with_sharding_constraint(h, NamedSharding(mesh, P("batch", None)))


args = (jnp.ones((8, 3)),)
