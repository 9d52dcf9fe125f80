"""The fix of RT01_donated_reused_broken.py: the loop carries the step's result, never the
donated argument (``params = f(params)``).

Report: jax-ml/jax#9675, #16906, #9237.
"""

import jax
import jax.numpy as jnp


def step(params):
    return params - 0.1 * jnp.sign(params)


f = jax.jit(step, donate_argnums=0)
params = jnp.ones(4)
params = f(params)  # the old buffer is gone, and so is its name
args = (params,)
