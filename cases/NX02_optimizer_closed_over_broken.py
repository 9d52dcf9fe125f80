"""An NNX train step that closes over its model and optimizer, compiled with ``jax.jit``.

Reports: google/flax#3997 (the trace-level error of NNX state changed under ``jax.jit``) and
maxencefaldor/cax#17, "Flax error in getting started Colab notebook"
(https://github.com/maxencefaldor/cax/issues/17: a module method that changes NNX state, under
a JAX transform, raises the trace-level error). The step below is the NNX MNIST tutorial's
``train_step`` with its model and optimizer taken from the enclosing scope instead of passed
to ``nnx.jit``: ``optimizer.update`` cannot write the new params back from inside
``jax.jit``'s trace ("Cannot extract graph node from different trace level").
"""

import jax
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


@jax.jit
def f(x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


args = (x, y)
