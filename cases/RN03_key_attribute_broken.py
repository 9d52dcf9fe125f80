"""Randomness that does not advance: a key kept in an object attribute and split inside a jitted
method (the PRNGKeySequence of https://github.com/jax-ml/jax/pull/1133, where mattjj shows it
"relies on Python side effects": under jit the split runs once, at trace time). The new key is
a tracer left in the attribute; every later call of the compiled program reuses the traced key
and draws the same noise. Plain JAX raises nothing."""

import jax
import jax.numpy as jnp


class Noisy:
    def __init__(self, seed):
        self.key = jax.random.key(seed)

    def sample(self, x):
        self.key, sub = jax.random.split(self.key)
        return x + jax.random.normal(sub, x.shape)


noisy = Noisy(0)
sample = jax.jit(noisy.sample)


def f(x):
    return [sample(x) for _ in range(2)]


args = (jnp.zeros(3),)
