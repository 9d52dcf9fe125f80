"""The running value kept in float32, as the hint says (upcast the operands of the addition);
the inputs stay bfloat16. See ``DT06_bf16_add_cancel_broken.py``."""

import jax.numpy as jnp


def f(prior_value, num_to_be_added):
    prior = prior_value.astype(jnp.float32)
    post_value = prior + num_to_be_added.astype(jnp.float32)
    return post_value - prior


args = (jnp.bfloat16(1.04858e06), jnp.bfloat16(2032))
