"""in_axes with three entries for a function called with two positional arguments."""
import jax
import jax.numpy as jnp
import numpy as np


def f(a, b):
    return a + b


args = (np.ones(3, np.float32), np.ones(3, np.float32))
in_axes = (0, 0, None)

if __name__ == "__main__":
    print(jax.vmap(f, in_axes)(*args))
