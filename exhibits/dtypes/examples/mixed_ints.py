# A uint32 and an int32: the one pair whose promotion depends on x64 (int32 with x64 off, so
# that two 32-bit inputs never make a 64-bit type; int64 with x64 on).
import jax.numpy as jnp
import numpy as np


def f(counts, offsets):
    return counts + offsets


args = (np.arange(4, dtype=np.uint32), jnp.arange(4, dtype=jnp.int32))
