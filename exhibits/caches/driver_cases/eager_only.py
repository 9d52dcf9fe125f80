# No jit at all: f runs op by op; the exhibit says no jitted call was observed.
import jax.numpy as jnp


def f(x):
    return jnp.sin(x) * 2


args = (jnp.ones(3),)
