"""The per-layer labels fixed as google/flax#3955 does: an ``nnx.State`` with the same keys, a
prefix of the parameters ``nnx.Optimizer`` hands to optax. See
``FO07_nnx_dict_labels_broken.py``."""

import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.backbone = nnx.Linear(4, 8, rngs=rngs)
        self.head = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(nnx.relu(self.backbone(x)))


labels = nnx.State({"backbone": "frozen", "head": "train"})  # the params' own node type
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
