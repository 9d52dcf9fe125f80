"""The loss accumulator kept in float32, as the hint says: a float32 initial carry and each
bfloat16 loss upcast as it is added. See ``DT07_bf16_loss_accumulator_broken.py``."""

import jax
import jax.numpy as jnp
import numpy as np


def f(step_losses):
    def add(total, loss):
        return total + loss.astype(jnp.float32), None

    total, _ = jax.lax.scan(add, jnp.zeros((), jnp.float32), step_losses)
    return total / step_losses.shape[0]


args = (jnp.asarray(np.linspace(2.5, 2.1, 1024), jnp.bfloat16),)
