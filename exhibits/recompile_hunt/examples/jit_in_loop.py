"""No `step`: the driver jits a fresh lambda inside its loop (as in case C05), so every call is a
step and every step compiles."""
import jax


def f(n):
    i = 0
    while i < n:
        i = jax.jit(lambda v: v + 1)(i)  # a new function object every iteration
    return i


args = (5,)
