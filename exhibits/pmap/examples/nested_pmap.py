# A pmap inside a pmap: the old way to map two device axes.
import jax
import numpy as np

axis_name = "i"


def inner(y):
    return jax.lax.psum(y, "j")


def f(x):  # x: one row of the outer axis
    return jax.pmap(inner, axis_name="j")(x)


args = (np.ones((2, 4, 3), np.float32),)  # 2 x 4 = 8 devices
