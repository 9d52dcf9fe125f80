"""A Python `if` on a symbolic dimension: JAX cannot say whether `b > 2` for every `b`, so the
conversion fails at the line of `f` that asks."""

import jax.numpy as jnp
import numpy as np


def f(x):
    if x.shape[0] > 2:
        return jnp.sum(x[:2])
    return jnp.sum(x)


args = (np.arange(5, dtype=np.float32),)
polymorphic_shapes = ["(b,)"]
