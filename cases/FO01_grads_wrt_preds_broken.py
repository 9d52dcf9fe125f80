"""An optax step whose gradient was taken with respect to the predictions, not the params.

Report: google-deepmind/optax#291, "TypeError: unsupported operand type(s) for *: 'float' and
'FrozenDict'" (https://github.com/google-deepmind/optax/issues/291): the user wrote
``grads = jax.grad(loss)(preds, y)``, so ``grads`` has the shape of the predictions (one array),
while ``opt.init(params)`` built the Adam moments with the params' structure (a dict). optax's
``tree_map`` pairs the one array with the whole dict and the multiplication inside fails.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

model = nn.Dense(1)
x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
y = jnp.array([[0.5], [-0.5], [1.0], [0.0]])
params = model.init(jax.random.key(0), x)
opt = optax.adam(learning_rate=0.003)
opt_state = opt.init(params)


def loss(preds, targets):
    return jnp.mean((preds - targets) ** 2)


def f(params, x, y):
    preds = model.apply(params, x)
    grads = jax.grad(loss)(preds, y)  # d loss / d preds: one array
    updates, _state = opt.update(grads, opt_state)
    return optax.apply_updates(params, updates)


args = (params, x, y)
