"""The token count accumulated and returned in float32 (``preferred_element_type``), as the
hint says; the operands stay bfloat16. See ``DT05_bf16_token_count_broken.py``."""

import jax.numpy as jnp
import numpy as np


def f(losses, mask):
    total = jnp.dot(losses, mask, preferred_element_type=jnp.float32)
    count = jnp.dot(mask, mask, preferred_element_type=jnp.float32)
    return total / count


rng = np.random.default_rng(0)
losses = jnp.asarray(rng.uniform(1.0, 3.0, 5000), jnp.bfloat16)
mask = jnp.asarray(np.arange(5000) < 4097, jnp.bfloat16)
args = (losses, mask)
