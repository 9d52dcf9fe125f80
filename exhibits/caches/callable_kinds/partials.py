# jax.jit of functools.partial objects: each partial is a new callable, each compiles.
import functools

import jax
import jax.numpy as jnp


def scale(k, x):
    return x * k


def f(x):
    s2 = jax.jit(functools.partial(scale, 2.0))
    s3 = jax.jit(functools.partial(scale, 3.0))
    s2b = jax.jit(functools.partial(scale, 2.0))
    return s2(x), s3(x), s2b(x)


args = (jnp.ones(3),)
