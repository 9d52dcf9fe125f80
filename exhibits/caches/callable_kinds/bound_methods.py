# jax.jit of bound methods of two instances: two function objects, two compiles.
import jax
import jax.numpy as jnp


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k


a = Scaler(2.0)
b = Scaler(3.0)
apply_a = jax.jit(a.apply)
apply_b = jax.jit(b.apply)


def f(x):
    return apply_a(x), apply_b(x), apply_a(x + 1)


args = (jnp.ones(3),)
