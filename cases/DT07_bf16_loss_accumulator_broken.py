"""The mean training loss over 1,024 steps, summed in a bfloat16 loop carry.

Reports: pytorch/xla#2425, "Add warning on loss values when using XLA_USE_BF16"
(https://github.com/pytorch/xla/pull/2425): with bfloat16 arithmetic "the numerator stops
growing due to lack of precision but [the] denominator keeps growing", so an average of losses
over many steps is not meaningful; mlnomadpy/flaxchat#6, "Harden train-step numerics: FP32
gradient accumulation" (https://github.com/mlnomadpy/flaxchat/issues/6): an accumulator made
with ``zeros_like`` of bfloat16 values loses small contributions. Here the carry stops near
1,024 (where bfloat16's step is 8, so each loss of about 2.3 rounds away) while the
losses sum to about 2,355 in float32.
"""

import jax
import jax.numpy as jnp
import numpy as np


def f(step_losses):
    def add(total, loss):
        return total + loss, None

    total, _ = jax.lax.scan(add, jnp.zeros((), step_losses.dtype), step_losses)
    return total / step_losses.shape[0]


args = (jnp.asarray(np.linspace(2.5, 2.1, 1024), jnp.bfloat16),)
