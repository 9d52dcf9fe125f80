"""Numpy int64 ids above 2**31 passed to JAX with x64 off: JAX wraps them around to int32.

Report: jax-ml/jax#18385, "silent truncation of numpy int64 arrays to int32 range"
(https://github.com/jax-ml/jax/issues/18385): ``jax.jit(lambda x: x + 0)(numpy.array([2**32]))``
gives ``[0]``. With x64 off, a numpy int64 array is cast to int32 without a range check (a
Python int that large raises ``OverflowError`` instead). Hashed ids, byte offsets and
nanosecond timestamps are such values; here the buckets of two of three ids come out wrong.
"""

import jax.numpy as jnp
import numpy as np

n_buckets = 1000
ids = np.array([7, 2**32 + 7, 3 * 2**31 + 11], dtype=np.int64)  # hashed ids, 64 bits


def f(ids):
    return jnp.mod(ids, n_buckets)


args = (ids,)
