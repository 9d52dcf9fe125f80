"""vmap of grad over a flat (N,) vector of points: each slice is a scalar."""
import jax
import jax.numpy as jnp


def u(x):
    return x ** 3 + jnp.sin(x)


def f(x):
    return jax.grad(u)(x)


args = (jnp.linspace(0.0, 1.0, 4),)
in_axes = 0
# The case names the vmap exhibit: vmap(f) where f already calls grad.
stack = ["vmap"]
