"""Freezing part of an NNX model with ``optax.multi_transform``: labels made by mapping over
``nnx.state(model, nnx.Param)`` keep their ``nnx.Param`` wrappers.

Reports: google/flax#3955, "``optax.multi_transform`` + ``nnx.State``/``nnx.Optimizer``
troubles" (https://github.com/google/flax/issues/3955), and google-deepmind/optax#1148,
"multitransform does not work with flax nnx"
(https://github.com/google-deepmind/optax/issues/1148), whose answer builds the labels from the
state's structure. ``jax.tree.map`` over an NNX state maps inside each ``nnx.Param`` and wraps
every label back in one, so the mask optax makes from the labels inside ``tx.update`` has a
``Param`` where the gradient (unwrapped by ``nnx.Optimizer``) has an array: JAX's "prefix
pytree ... different types" error, raised between two trees optax made, not by the user's
``grad`` (which differentiates the model, as it should).
"""

import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.backbone = nnx.Linear(4, 8, rngs=rngs)
        self.head = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(nnx.relu(self.backbone(x)))


model = Model(nnx.Rngs(0))
params = nnx.state(model, nnx.Param)
labels = jax.tree.map(lambda p: "frozen" if p.ndim == 2 and p.shape[0] == 4 else "train", params)
tx = optax.multi_transform({"train": optax.adam(1e-2), "frozen": optax.set_to_zero()}, labels)
optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
x = jnp.linspace(-1.0, 1.0, 20).reshape(5, 4)
y = jnp.linspace(0.0, 1.0, 5).reshape(5, 1)


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


@nnx.jit
def f(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


args = (model, optimizer, x, y)
