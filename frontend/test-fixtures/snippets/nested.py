import jax
import jax.numpy as jnp


def f(x):
    y = jnp.dot(x, x.T)
    z = jax.nn.relu(y) + jnp.where(y > 0, y, 0.0)
    return jax.lax.scan(lambda c, a: (c + a.sum(), c), 0.0, z)


args = (jnp.ones((3, 4)),)
