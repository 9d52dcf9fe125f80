"""A bfloat16 update scaled by a numpy float32 learning rate: the new params are float32.

Report: google-deepmind/optax#1405, "DType of update depends on whether bfloat16 learning rate
is passed as float, jax scalar or numpy scalar"
(https://github.com/google-deepmind/optax/issues/1405): a numpy scalar is strongly typed in
JAX, so ``lr * grads`` joins bfloat16 with float32 into float32, and so does every value after
it (google/flax#2384, "Half precision in flax models", asks the same of whole models). JAX
raises nothing; the params silently leave bfloat16 after the first step.
"""

import jax.numpy as jnp
import numpy as np

lr = np.float32(1e-3)  # numpy: a strongly typed float32


def f(params, grads):
    step = lr * grads  # bf16 grads promoted to f32 here
    return params - step


args = (jnp.ones((4, 8), jnp.bfloat16), jnp.full((4, 8), 0.5, jnp.bfloat16))
