# Jits where users keep them: a dict, a closure, an instance attribute, a tuple.
import jax
import jax.numpy as jnp


def double(x):
    return x * 2


def inc(x):
    return x + 1


table = {"double": jax.jit(double)}
pair = (jax.jit(inc),)


def make():
    step = jax.jit(inc)

    def run(x):
        return step(x)

    return run


runner = make()


class Model:
    def __init__(self):
        self.step = jax.jit(self.shift)

    def shift(self, x):
        return x - 1


model = Model()


def f(x):
    return table["double"](x), runner(x), runner(x), model.step(x), pair[0](x)


args = (jnp.ones(3),)
