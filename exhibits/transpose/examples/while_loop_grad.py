"""Reverse mode through lax.while_loop: the trip count is only known at run time."""
import jax
import jax.numpy as jnp
from jax import lax


def f(x):
    # halve x until it is below 1: how many steps depends on the value of x
    def cond(c):
        return c[0] >= 1.0

    def body(c):
        return c[0] / 2.0, c[1] + 1.0

    y, steps = lax.while_loop(cond, body, (x, 0.0))
    return y * steps


args = (10.0,)

if __name__ == "__main__":
    print(jax.jvp(f, args, (1.0,)))  # forward mode works
    print(jax.grad(f)(*args))  # ValueError: Reverse-mode differentiation does not work ...
