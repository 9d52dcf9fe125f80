"""nnx.jit recompiles every epoch when the optimizer is rebuilt
(https://github.com/google/flax/issues/5548: "`nnx.jit` recompiles every epoch when recreating
`nnx.Module / nnx.Optimizer`"). Each epoch builds a new model and a new nnx.Optimizer with a new
optax.adam(...): the optimizer's GraphDef keeps the optax transformation as a static attribute,
its init/update are new closures each time, so the GraphDef is not equal to the cached one
although it prints the same (JAX's explain_cache_misses: "the pytree node metadata does not
match" at the optimizer's _graphdef). A fresh process compiles jit(train_step) once per epoch."""

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


def f(epochs):
    losses = []
    for epoch in range(epochs):
        model = MLP(nnx.Rngs(epoch))
        optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
        losses.append(train_step(model, optimizer, x, y))
    return losses


args = (2,)
