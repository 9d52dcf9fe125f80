"""Randomness that does not advance: a global key read inside a jitted function (the report of
https://github.com/jcmgray/autoray/issues/27, "JAX tracing out the random global key": the
outputs of a jitted sampler were the same on every call). The key is a constant of the traced
program, so each call draws the same number."""

import jax
import jax.numpy as jnp

KEY = jax.random.PRNGKey(0)


@jax.jit
def sampler(x):
    return x + jax.random.normal(KEY)


def f(x):
    return [sampler(x) for _ in range(3)]


args = (jnp.float32(0.0),)
