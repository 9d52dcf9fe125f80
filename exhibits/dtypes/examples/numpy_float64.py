# np.ones makes float64. With x64 off JAX takes it as float32 (canonicalization), so the sum is
# float32; with x64 on it stays float64, and so does the sum. The int8 array and the Python int
# (weakly typed, i*) never widen a float.
import jax.numpy as jnp
import numpy as np


def f(x, y, n, k):
    return x + y * n + k


args = (np.ones(3), jnp.ones(3, jnp.float32), np.int8(2), 3)
