"""Batch dims that do not line up: x is mapped along axis 1 (its columns), y along axis 0, and
the bias is not mapped at all: the rules move (transpose) and broadcast (broadcast_in_dim)
axes, and vmap broadcasts the unmapped output to out_axes=0."""
import jax
import jax.numpy as jnp
import numpy as np


def f(x, y, bias):
    s = x * y  # x: column (3,), y: row (3,)
    t = jnp.where(s > 4.0, s, bias)  # bias: one (3,) vector for every example
    return jnp.sum(t), bias


x = np.arange(12, dtype=np.float32).reshape(3, 4)  # 4 columns of length 3
y = np.ones((4, 3), np.float32)  # 4 rows of length 3
bias = np.full(3, 0.5, np.float32)
args = (x, y, bias)
in_axes = (1, 0, None)

if __name__ == "__main__":
    print(jax.make_jaxpr(jax.vmap(f, in_axes))(*args))
