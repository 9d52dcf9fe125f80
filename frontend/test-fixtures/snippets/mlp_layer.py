import jax.numpy as jnp

def f(x, w):
    h = jnp.tanh(x @ w)
    return jnp.sum(h * h)

args = (jnp.ones((8, 16)), jnp.ones((16, 4)))
