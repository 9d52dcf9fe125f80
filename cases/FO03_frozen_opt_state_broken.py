"""An optimizer state built from ``FrozenDict`` params, updated with plain-dict gradients.

Reports: google/flax#1223, "Should Flax return FrozenDicts or regular dicts?"
(https://github.com/google/flax/issues/1223), after which Flax (0.7.1) returns plain dicts from
``init``; apple/axlearn#47, "Remove FrozenDict" (``FrozenDict`` on one side and ``dict`` on the
other of a tree map fails); google-deepmind/optax#160, "optax.mask does not play well with flax
FrozenParams" ("Expected dict, got FrozenDict"). Here the optimizer state comes from params
restored as a ``FrozenDict`` (older Flax, a checkpoint, ``flax.core.freeze``), while the
training loop's params, and so their gradients, are the plain dicts today's ``init`` returns.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax.core import freeze

model = nn.Dense(2)
x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
params = model.init(jax.random.key(0), x)  # a plain dict
restored = freeze(params)  # as an older checkpoint gives it back
tx = optax.adam(1e-2)
opt_state = tx.init(restored)


def loss(params, x):
    return jnp.mean(model.apply(params, x) ** 2)


def f(params, x):
    grads = jax.grad(loss)(params, x)
    updates, _state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates)


args = (params, x)
