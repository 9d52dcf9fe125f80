# jax.vmap and jax.grad of a jitted g, called eagerly: JAX compiles a batched and differentiated
# jit(g) each time, none of them a call of the jit object with arrays.
import jax
import jax.numpy as jnp


@jax.jit
def g(x):
    return x * 2


def f(x):
    a = g(x)
    b = jax.vmap(g)(jnp.stack([x, x]))
    c = jax.grad(lambda y: g(y).sum())(x)
    d = g(x)
    return a, b, c, d


args = (jnp.ones(3),)
