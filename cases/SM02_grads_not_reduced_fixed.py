"""The fix of SM02_grads_not_reduced_broken (JAX's parallel-programming tutorial; jax-ml/jax#19175):
the per-device gradients go through ``jax.lax.pmean`` over ``"batch"`` before the update, so
every device applies the gradient of the whole batch and holds the same weights.
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
    grads = jax.lax.pmean(jax.grad(loss)(w, x, y), "batch")
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
