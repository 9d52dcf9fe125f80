"""Real code: a jitted data-parallel loss that calls jax.shard_map itself (the docs' pattern, in
"Introduction to parallel programming": each device computes the loss of its part of the
batch, then pmean averages them). The snippet gives no in_specs: the exhibit finds the call
inside f, with the inputs f made for it (x normalised row by row)."""
import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):  # plain Python
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

mesh = jax.make_mesh((8,), ("batch",), axis_types=(AxisType.Auto,))


def local_loss(w, x, y):  # one device's part of the batch: x f32[2, 4], y f32[2, 1]
    pred = jnp.tanh(x @ w)
    return jax.lax.pmean(jnp.mean((pred - y) ** 2), "batch")  # the same on every device


@jax.jit
def f(w, x, y):
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True)
    return jax.shard_map(
        local_loss, mesh=mesh, in_specs=(P(), P("batch"), P("batch")), out_specs=P()
    )(w, x, y)


args = (
    jnp.linspace(-1.0, 1.0, 4).reshape(4, 1),
    jnp.arange(64.0).reshape(16, 4) + 1.0,
    jnp.linspace(0.0, 1.0, 16).reshape(16, 1),
)

if __name__ == "__main__":
    print(f(*args))
