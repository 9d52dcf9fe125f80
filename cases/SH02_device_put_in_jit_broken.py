"""``jax.device_put(x, sharding)`` inside ``jax.jit``: no constraint, the output is replicated.

Report: jax-ml/jax#6221 ("Provide better error message when using device_put_sharded inside
jitted code", https://github.com/jax-ml/jax/issues/6221): "regular ``device_put`` ... doesn't do
anything when in jitted code but doesn't fail either"; jax-ml/jax#18086 asks the docs to say how
``device_put`` behaves with sharding. Inside ``jit`` on an Auto mesh, JAX's lowering rule for
``device_put`` returns its operand unchanged, so the batch the user meant to split over 4
devices comes out whole on each.
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
    return jax.device_put(h, NamedSharding(mesh, P("batch", None)))  # a no-op inside jit


args = (jnp.ones((8, 3)),)
