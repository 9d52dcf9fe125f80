"""The fix of SH01_indivisible_constraint_broken.py (jax-ml/jax#26946,
https://github.com/jax-ml/jax/issues/26946): pad the vocabulary to a multiple of the 8 devices
(24 rows), so that the constraint splits it in 8 blocks of 3 rows.
"""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = flags + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
vocab_size = 24  # padded to a multiple of the 8 devices


@jax.jit
def f(scale):
    embedding = jnp.arange(vocab_size * 16, dtype=jnp.float32).reshape(vocab_size, 16) * scale
    return jax.lax.with_sharding_constraint(embedding, NamedSharding(mesh, P("data", None)))


args = (jnp.float32(0.5),)
