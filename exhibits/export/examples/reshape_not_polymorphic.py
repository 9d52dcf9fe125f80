# A reshape that is right for the example's batch (6 rows of 8 split into 3 rows) but not for
# every batch b: 8*b elements do not always divide into 3 rows, so jax.export refuses it.
import jax.numpy as jnp
import numpy as np


def f(x):
    rows = x.reshape(3, -1)
    return jnp.sum(rows, axis=1)


args = (np.arange(48, dtype=np.float32).reshape(6, 8),)
shapes = ["(b, 8)"]
