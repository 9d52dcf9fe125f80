"""A small layer fine-tuned with bfloat16 weights: jax.grad returns bfloat16 gradients, right to
bfloat16 precision (about 1 part in 128), not to float32's.

Report: jax-ml/jax#30337, "jax.grad precision: float32 gradients of bfloat16 weights"
(https://github.com/jax-ml/jax/issues/30337): "jax.grad uses the same precision for gradients as
the weights". A check held at float32's tolerance would call this gradient wrong; at bfloat16's
it agrees with the float64 finite differences.
"""
import jax
import jax.numpy as jnp

W = (jax.random.normal(jax.random.key(0), (4, 3)) * 0.5).astype(jnp.bfloat16)
x = jax.random.normal(jax.random.key(1), (8, 4)).astype(jnp.bfloat16)
y = jax.random.normal(jax.random.key(2), (8, 3)).astype(jnp.bfloat16)


def f(W, x, y):
    return jnp.mean((jnp.tanh(x @ W) - y) ** 2)


args = (W, x, y)
argnums = 0
