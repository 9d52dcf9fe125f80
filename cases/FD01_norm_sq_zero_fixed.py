"""The fix of FD01_norm_sq_zero_broken.py: the squared norm written as a sum of squares.

Report: jax-ml/jax#4177 (https://github.com/jax-ml/jax/issues/4177), the reporter's own
sum_of_squares: its gradient at 0 is 2x = [0, 0], as the finite differences say.
"""
import jax.numpy as jnp


def f(x):
    return jnp.sum(x**2)


args = (jnp.zeros(2),)
