# jax.jit of callable objects (instances with __call__): JAX names them <unnamed function>.
import jax
import jax.numpy as jnp


class Affine:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k + 1


def f(x):
    g1 = jax.jit(Affine(2.0))
    g2 = jax.jit(Affine(3.0))
    return g1(x), g2(x), g1(x)


args = (jnp.ones(3),)
