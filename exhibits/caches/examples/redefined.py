"""The function redefined on every iteration (as re-running a notebook cell does)."""
import jax
import jax.numpy as jnp

x = jnp.ones(3)


def f(n):
    for _ in range(n):

        @jax.jit
        def step(v):  # a new function object each time round the loop
            return v * 2.0

        step(x)


args = (3,)
