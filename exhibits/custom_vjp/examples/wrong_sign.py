"""A custom_vjp with a sign error in bwd: d/dx sin(x) is cos(x), not -cos(x). The lab catches it
by comparing with autodiff of the same math and with finite differences."""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def my_sin(x):
    return jnp.sin(x)


def my_sin_fwd(x):
    return jnp.sin(x), jnp.cos(x)  # save cos(x) for the backward pass


def my_sin_bwd(cos_x, g):
    return (-cos_x * g,)  # wrong sign: should be cos_x * g


my_sin.defvjp(my_sin_fwd, my_sin_bwd)


def f(x, w):
    return jnp.sum(my_sin(x) * w)


args = (jnp.array([0.0, 0.5, 1.0]), jnp.array([1.0, 2.0, 3.0]))
