# A jit of a bound method made in __init__ and kept on the instance, for two instances.
import jax
import jax.numpy as jnp


class Model:
    def __init__(self, w):
        self.w = w
        self.forward = jax.jit(self._forward)

    def _forward(self, x):
        return x * self.w


def f(x):
    m1 = Model(jnp.full(3, 2.0))
    m2 = Model(jnp.full(3, 3.0))
    return m1.forward(x), m2.forward(x), m1.forward(x + 1)


args = (jnp.ones(3),)
