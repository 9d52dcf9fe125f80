"""With x64 on, a numpy float64 constant turns a float32 layer into float64.

Report: bytedance/jaqmc#64, "fix kfac registration with enable_x64"
(https://github.com/bytedance/jaqmc/pull/64): with ``jax_enable_x64`` Flax params stay float32
while values meeting float64 constants become float64, which "inserts dtype promotion
operations into the traced graph"; google-deepmind/dm-haiku#36 ("Ensure float32 inputs imply
float32 outputs when jax_enable_x64=1") is the same class. ``np.sqrt`` of a Python float is a
numpy float64 scalar, strongly typed: ``h * scale`` is float64 from that line on.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

fan_in = 16
scale = np.sqrt(2.0 / fan_in)  # numpy float64, strongly typed


def f(w, x):
    h = x @ w
    return jnp.tanh(h * scale)  # f32 h promoted to f64 here


args = (jnp.ones((16, 4), jnp.float32), jnp.ones((2, 16), jnp.float32))
