"""A committed input (jax.device_put to a device): no retrace, but a new lowering and compile,
and JAX's explain-cache-miss text says nothing (it covers tracing only)."""
import jax
import jax.numpy as jnp


def f(x):
    return jnp.exp(x) - 1.0


calls = [
    (jnp.ones(3),),
    (jax.device_put(jnp.ones(3), jax.devices()[0]),),
]
args = calls[0]
