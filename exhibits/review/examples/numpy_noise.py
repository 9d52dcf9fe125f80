"""A jitted step that adds numpy noise to its input: numpy draws the numbers once, while JAX
traces f, and the program keeps them as a constant, so every step adds the same "noise"."""
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def f(w, x):
    noise = np.random.normal(size=x.shape).astype(np.float32)
    h = (x + noise) @ w
    return w - 0.1 * jnp.mean(h) * w


args = (jnp.ones((16,)), jnp.ones((32, 16)))
