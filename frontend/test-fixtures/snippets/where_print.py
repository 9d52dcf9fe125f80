import jax.numpy as jnp

def f(x, y):
    print("tracing f with", x)
    z = jnp.sin(x) * 2.0
    w = jnp.where(z > 0, z, y)
    return jnp.sum(w), jnp.array([1.0, 2.0, 3.0])

args = (jnp.ones(3), 1.0)
