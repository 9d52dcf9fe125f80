"""RN04 fixed: the key is an argument, split before each call."""

import jax
import jax.numpy as jnp


@jax.jit
def sampler(key, x):
    return x + jax.random.normal(key)


def f(x):
    key = jax.random.PRNGKey(0)
    out = []
    for _ in range(3):
        key, sub = jax.random.split(key)
        out.append(sampler(sub, x))
    return out


args = (jnp.float32(0.0),)
