"""Real code: a data-parallel train step whose per-device gradients are returned unreduced.

Report: JAX's "Introduction to parallel programming" tutorial writes the data-parallel step
with ``jax.lax.pmean(grads, "batch")`` inside ``shard_map``; jax-ml/jax#19175 shows users who
turn the replication check off (``check_rep``, now ``check_vma``) when it complains. Without
the ``pmean`` and with the check off, ``out_specs=P()`` is trusted: the updated weights are
device 0's, from a quarter of the batch, and the devices disagree on them. The snippet gives no
``in_specs``: the shard_map exhibit finds the call in ``f``.
"""

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = flags + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((4,), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))


def loss(w, x, y):
    return jnp.mean((jnp.tanh(x @ w) - y) ** 2)


def local_step(w, x, y):  # one device's quarter of the batch
    grads = jax.grad(loss)(w, x, y)  # jax.lax.pmean(grads, "batch") is missing
    return w - 0.1 * grads


@jax.jit
def f(w, x, y):
    return jax.shard_map(
        local_step,
        mesh=mesh,
        in_specs=(P(), P("batch"), P("batch")),
        out_specs=P(),
        check_vma=False,
    )(w, x, y)


args = (
    jnp.linspace(-0.5, 0.5, 3),
    jnp.arange(24.0).reshape(8, 3) / 10.0,
    jnp.linspace(0.0, 1.0, 8),
)

if __name__ == "__main__":
    print(f(*args))
