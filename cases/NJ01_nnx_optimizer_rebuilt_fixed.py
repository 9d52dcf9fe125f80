"""NJ01 fixed: the optax transformation is built once, at module level; each epoch's new model
and nnx.Optimizer have equal GraphDefs, so jit(train_step) compiles once (a fresh process logs
one compile)."""

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(4, 8, rngs=rngs)
        self.l2 = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.l2(jax.nn.relu(self.l1(x)))


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


x = jnp.ones((16, 4))
y = jnp.zeros((16, 1))
tx = optax.adam(1e-3)  # built once: every optimizer's GraphDef holds this same object


def f(epochs):
    losses = []
    for epoch in range(epochs):
        model = MLP(nnx.Rngs(epoch))
        optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
        losses.append(train_step(model, optimizer, x, y))
    return losses


args = (2,)
