"""Real code: a jitted data-parallel loss whose shard_map returns each device's own partial
loss as if it were replicated, with the replication check turned off.

Report: jax-ml/jax#19175 shows users turning shard_map's replication check off (``check_rep``,
now ``check_vma``) when it refuses their collectives; the shard_map docs ("Tracking how values
vary over manual mesh axes") say that with the check off an ``out_specs`` of ``P()`` is
trusted, and the result is whatever one device holds. Here the mean over the batch is missing
its ``pmean``: the loss JAX returns is device 0's quarter-batch loss, and the other devices hold
other losses. The snippet gives no ``in_specs``: the shard_map exhibit finds the call in ``f``.
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
    return jnp.mean((x @ w - y) ** 2)  # jax.lax.pmean(..., "batch") is missing


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
