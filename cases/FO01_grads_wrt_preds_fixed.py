"""optax#291 fixed: the gradient is taken with respect to the params (the hint: differentiate
the params), so it has the params' structure and ``opt.update`` pairs it with the moments.
See ``FO01_grads_wrt_preds_broken.py``."""

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


def loss(params, x, targets):
    return jnp.mean((model.apply(params, x) - targets) ** 2)


def f(params, x, y):
    grads = jax.grad(loss)(params, x, y)  # d loss / d params
    updates, _state = opt.update(grads, opt_state)
    return optax.apply_updates(params, updates)


args = (params, x, y)
