"""The fix of SM01_unchecked_loss_in_jit_broken (jax-ml/jax#19175; the shard_map docs): the
per-device mean goes through ``jax.lax.pmean`` over ``"batch"``, so every device holds the mean
over the whole batch, as ``out_specs=P()`` says; the replication check may stay off.
"""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = flags + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((4,), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))


def local_loss(w, x, y):  # one device's quarter of the batch
    return jax.lax.pmean(jnp.mean((x @ w - y) ** 2), "batch")


@jax.jit
def f(w, x, y):
    return jax.shard_map(
        local_loss,
        mesh=mesh,
        in_specs=(P(), P("batch"), P("batch")),
        out_specs=P(),
        check_vma=False,
    )(w, x, y)


args = (
    jnp.linspace(-1.0, 1.0, 3),
    jnp.arange(24.0).reshape(8, 3) / 10.0,
    jnp.linspace(0.0, 2.0, 8),
)

if __name__ == "__main__":
    print(f(*args))
