"""A sharding constraint on a dimension the mesh axis does not divide: replicated, silently.

Report: jax-ml/jax#26946, "Silent data replication when using shard constraints"
(https://github.com/jax-ml/jax/issues/26946): an embedding table of ``vocab_size = 17`` rows
constrained with ``P('data', None)`` over 8 devices inside ``jax.jit``. JAX raises for the same
sharding on ``device_put`` or ``out_shardings``, but inside ``jit`` the constraint is accepted
and the compiled program holds the whole table on every device ("change to 16 for correct
sharding").
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
vocab_size = 17


@jax.jit
def f(scale):
    embedding = jnp.arange(vocab_size * 16, dtype=jnp.float32).reshape(vocab_size, 16) * scale
    # 17 rows over 8 devices:
    return jax.lax.with_sharding_constraint(embedding, NamedSharding(mesh, P("data", None)))


args = (jnp.float32(0.5),)
