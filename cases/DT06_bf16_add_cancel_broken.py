"""Adding 2032 to a bfloat16 value near a million, then taking the difference: 0.

Report: jax-ml/jax#29323, "Incorrect sum-operation results on bfloat16"
(https://github.com/jax-ml/jax/issues/29323): ``prior + 2032 - prior`` gives 0 in bfloat16;
jakevdp's answer: bfloat16 has 7 bits of mantissa, ``jnp.spacing`` of 1.04858e6 is 8192, so
the 2032 added rounds away. The difference float32 keeps (2032) is lost at the addition.
"""

import jax.numpy as jnp


def f(prior_value, num_to_be_added):
    post_value = prior_value + num_to_be_added
    return post_value - prior_value


args = (jnp.bfloat16(1.04858e06), jnp.bfloat16(2032))
