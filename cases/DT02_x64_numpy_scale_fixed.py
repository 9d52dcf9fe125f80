"""The fix of DT02_x64_numpy_scale_broken.py (bytedance/jaqmc#64,
https://github.com/bytedance/jaqmc/pull/64): make the constant a Python float (weakly typed),
so that it takes float32 from ``h`` and the layer stays float32 with x64 on.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

fan_in = 16
scale = float(np.sqrt(2.0 / fan_in))  # a Python float: weakly typed


def f(w, x):
    h = x @ w
    return jnp.tanh(h * scale)


args = (jnp.ones((16, 4), jnp.float32), jnp.ones((2, 16), jnp.float32))
