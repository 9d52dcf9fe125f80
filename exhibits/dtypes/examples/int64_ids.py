# Hashed token ids (numpy int64) and a float64 embedding table, as numpy makes them. With x64 off
# JAX takes both as 32 bits. The table is rounded to float32, as JAX documents: a note. The ids
# above 2**31 wrap around, so they look up the wrong rows: a finding (jax-ml/jax#18385).
import jax.numpy as jnp
import numpy as np


def f(ids, table):
    return jnp.take(table, jnp.mod(ids, table.shape[0]), axis=0)


ids = np.array([7, 2**32 + 7, 3 * 2**31 + 11], dtype=np.int64)
args = (ids, np.random.default_rng(0).normal(size=(1000, 4)))
