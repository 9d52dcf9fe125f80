"""flax#3050 fixed the way the hint says: the gradient covers every parameter, and the backbone
is frozen by ``optax.multi_transform`` with ``optax.set_to_zero()`` for it, so the optimizer
state and the gradient have the params' structure. See ``FO04_partial_grads_broken.py``."""

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
labels = {"backbone": "frozen", "head": "trainable"}
tx = optax.multi_transform({"trainable": optax.adam(1e-2), "frozen": optax.set_to_zero()}, labels)
opt_state = tx.init(params)


def loss(params, x, y):
    pred = model.apply({"params": params}, x)
    return jnp.mean((pred - y) ** 2)


def f(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    updates, _state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates)


args = (params, x, y)
