"""The norm computed in float32, as the hint says (its operand upcast). See
``DT08_f16_norm_overflow_broken.py``."""

import jax.numpy as jnp


def f(x):
    return jnp.linalg.norm(x.astype(jnp.float32))


args = (jnp.full((3, 3), 100, dtype=jnp.float16),)
