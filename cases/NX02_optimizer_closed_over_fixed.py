"""The NNX train step fixed the way the hint says: model and optimizer are arguments of
``nnx.jit``, which carries their updates out. See ``NX02_optimizer_closed_over_broken.py``."""

import jax.numpy as jnp
import optax
from flax import nnx

model = nnx.Sequential(
    nnx.Linear(4, 8, rngs=nnx.Rngs(0)), nnx.relu, nnx.Linear(8, 3, rngs=nnx.Rngs(1))
)
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
x = jnp.linspace(-1.0, 1.0, 20).reshape(5, 4)
y = jnp.array([0, 1, 2, 1, 0])


def loss_fn(model, x, y):
    logits = model(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


@nnx.jit
def f(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


args = (model, optimizer, x, y)
