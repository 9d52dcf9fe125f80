"""The fix of DT01_bf16_numpy_lr_broken.py (google-deepmind/optax#1405,
https://github.com/google-deepmind/optax/issues/1405): a Python float is weakly typed, so it
takes the bfloat16 of the grads and the params stay bfloat16.
"""

import jax.numpy as jnp

lr = 1e-3  # a Python float: weakly typed


def f(params, grads):
    step = lr * grads
    return params - step


args = (jnp.ones((4, 8), jnp.bfloat16), jnp.full((4, 8), 0.5, jnp.bfloat16))
