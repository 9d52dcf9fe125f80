"""The fix of DT04_int64_ids_broken.py (jax-ml/jax#18385,
https://github.com/jax-ml/jax/issues/18385): turn on x64 before JAX takes the ids, so that they
stay int64 and every bucket is numpy's. (Without x64: bucket the ids in numpy, whose results
fit in int32, and hand JAX those.)
"""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

n_buckets = 1000
ids = np.array([7, 2**32 + 7, 3 * 2**31 + 11], dtype=np.int64)  # hashed ids, 64 bits


def f(ids):
    return jnp.mod(ids, n_buckets)


args = (ids,)
