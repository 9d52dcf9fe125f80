"""Transfer learning: only the head's gradient is passed to an optimizer made for all params.

Report: google/flax#3050, "optax.multi_transform raises an issue when creating a TrainState"
(https://github.com/google/flax/issues/3050), following Flax's transfer-learning guide: the
user wants the backbone frozen. Here the gradient is taken for the trainable head only, while
``tx.init(params)`` built the Adam moments for backbone and head, so ``tx.update`` pairs a
one-key dict with a two-key one.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(4, name="backbone")(x))
        return nn.Dense(1, name="head")(x)


model = Model()
x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
y = jnp.array([[1.0], [0.0], [1.0], [0.0]])
params = model.init(jax.random.key(0), x)["params"]
tx = optax.adam(1e-2)
opt_state = tx.init(params)


def loss(head, backbone, x, y):
    pred = model.apply({"params": {"backbone": backbone, "head": head}}, x)
    return jnp.mean((pred - y) ** 2)


def f(params, x, y):
    head_grads = jax.grad(loss)(params["head"], params["backbone"], x, y)
    grads = {"head": head_grads}  # the backbone is left out to freeze it
    updates, _state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates)


args = (params, x, y)
