# A bfloat16 update scaled by a numpy float32 learning rate (google-deepmind/optax#1405): a numpy
# scalar is strongly typed, so lr * grads is float32, and the params leave bfloat16 silently.
# The exhibit reports the promotion at its line; with lr = 1e-3 (a Python float) it stays bfloat16.

import jax.numpy as jnp
import numpy as np

lr = np.float32(1e-3)  # numpy: a strongly typed float32


def f(params, grads):
    step = lr * grads  # bf16 grads promoted to f32 here
    return params - step


args = (jnp.ones((4, 8), jnp.bfloat16), jnp.full((4, 8), 0.5, jnp.bfloat16))
