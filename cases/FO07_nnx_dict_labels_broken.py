"""Per-layer optimizers for an NNX model: ``optax.multi_transform`` labels written as a plain
dict, one label per layer.

Report: google-deepmind/optax#1148, "multitransform does not work with flax nnx"
(https://github.com/google-deepmind/optax/issues/1148): ``nnx.Optimizer(model, tx)`` fails in
``tx.init`` with "Expected dict, got State(...)" (jax 0.10.2 says "pytree structure error:
different types at key path"). The parameters ``nnx.Optimizer`` hands to optax are an
``nnx.State``, a pytree node of its own type, and a label tree must be a prefix of them: a
``dict`` is not a prefix of a ``State`` even with the same keys. google/flax#3955 (the same
question) wraps the labels in ``nnx.State``. Both trees meet inside optax (``masked``'s
``init``); neither is a gradient.
"""

import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.backbone = nnx.Linear(4, 8, rngs=rngs)
        self.head = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(nnx.relu(self.backbone(x)))


labels = {"backbone": "frozen", "head": "train"}
tx = optax.multi_transform({"train": optax.adam(1e-2), "frozen": optax.set_to_zero()}, labels)
x = jnp.linspace(-1.0, 1.0, 20).reshape(5, 4)
y = jnp.linspace(0.0, 1.0, 5).reshape(5, 1)


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


def f(x, y):
    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


args = (x, y)
