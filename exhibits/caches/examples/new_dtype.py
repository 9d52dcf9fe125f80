"""A new dtype: float32, then int32, then float32 again (cached)."""
import jax.numpy as jnp


def f(x):
    return x * 2 + 1


calls = [
    (jnp.arange(4.0),),
    (jnp.arange(4),),
    (jnp.arange(4.0),),
]
args = calls[0]
