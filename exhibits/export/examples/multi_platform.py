# One export for two platforms: jax.lax.platform_dependent picks a branch per platform, and the
# exported module takes the platform's index as its first argument and switches on it.
import jax
import jax.numpy as jnp
import numpy as np


def f(x):
    return jax.lax.platform_dependent(
        x,
        cpu=jnp.cumsum,
        cuda=lambda v: jax.lax.associative_scan(jnp.add, v),
    )


args = (np.arange(1, 9, dtype=np.float32),)
platforms = ["cpu", "cuda"]
