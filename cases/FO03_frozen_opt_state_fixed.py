"""FrozenDict vs dict fixed: the restored params are unfrozen once (``flax.core.unfreeze``, the
hint) before ``tx.init``, so params, gradients and optimizer state share one structure. See
``FO03_frozen_opt_state_broken.py``."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.core import freeze, unfreeze

model = nn.Dense(2)
x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
params = model.init(jax.random.key(0), x)  # a plain dict
restored = freeze(params)  # as an older checkpoint gives it back
tx = optax.adam(1e-2)
opt_state = tx.init(unfreeze(restored))


def loss(params, x):
    return jnp.mean(model.apply(params, x) ** 2)


def f(params, x):
    grads = jax.grad(loss)(params, x)
    updates, _state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates)


args = (params, x)
