"""jcmgray/autoray#27, fixed: the randomness is explicit, a `jax.random` key passed in (a new key
per call draws new numbers; the same key, the same numbers, under jit or not)."""

import jax
import jax.numpy as jnp


@jax.jit
def f(x, key):
    noise = jax.random.normal(key, x.shape)
    return x + 0.1 * noise


args = (jnp.zeros(4), jax.random.key(0))
