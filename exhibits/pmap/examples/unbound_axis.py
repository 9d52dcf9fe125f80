# The collective names an axis that pmap was not given.
import jax
import numpy as np

axis_name = "i"


def f(x):
    return x / jax.lax.psum(x, "batch")  # pmap bound "i", not "batch"


n = jax.local_device_count()
args = (np.arange(n, dtype=np.float32) + 1,)
