"""vmap of grad over an (N, 1) column of points."""
import jax
import jax.numpy as jnp


def u(x):
    return x ** 3 + jnp.sin(x)


def f(x):
    return jax.grad(u)(x)  # each vmapped slice has shape (1,), so u(x) is not a scalar


args = (jnp.linspace(0.0, 1.0, 4).reshape(4, 1),)
in_axes = 0
# The case names the vmap exhibit: vmap(f) where f already calls grad.
stack = ["vmap"]
