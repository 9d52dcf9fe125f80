# A jitted method of a pytree class (self is traced: its arrays are arguments), __call__ and a
# named method, called on two instances of one structure: one compile each, as a fresh process.
import dataclasses

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Linear:
    w: jax.Array

    @jax.jit
    def __call__(self, x):
        return x @ self.w

    @jax.jit
    def scaled(self, x, k):
        return k * (x @ self.w)


def f(x):
    a = Linear(jnp.ones((3, 2)))
    b = Linear(jnp.full((3, 2), 2.0))
    return a(x), b(x), a.scaled(x, 2.0), b.scaled(x, 3.0)


args = (jnp.ones((1, 3)),)
