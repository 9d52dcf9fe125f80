"""RN01 fixed: the jitted function returns the model's new state (nnx.state) and the loop passes
it to the next call, so the Rngs count advances and each call draws a new dropout mask."""

import jax
import jax.numpy as jnp
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))


model = Model(nnx.Rngs(0))
graphdef, state = nnx.split(model)


@jax.jit
def forward(state, x):
    m = nnx.merge(graphdef, state)
    y = m(x)
    return y, nnx.state(m)


def f(x):
    s = state
    out = []
    for _ in range(2):
        y, s = forward(s, x)
        out.append(y)
    return out


args = (jnp.ones((2, 4)),)
