"""Two mapped arguments whose mapped axes have different sizes (3 and 4)."""
import jax
import jax.numpy as jnp
import numpy as np


def f(a, b):
    return a * b


args = (np.ones(3, np.float32), np.ones(4, np.float32))
in_axes = 0

if __name__ == "__main__":
    print(jax.vmap(f, in_axes)(*args))
