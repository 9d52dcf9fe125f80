"""One Adam train step of a Flax linen CNN with batch norm, written as a pure function of pytrees.

The model (a 3x3 convolution with 8 channels and no bias, batch norm, ReLU, mean pooling, a
dense head of 10) is a linen ``Module`` closed over by ``f``; its variables are ``params`` and
``batch_stats`` (plain dicts, as ``init`` returns them). ``f(params, batch_stats, opt_state, x,
y)`` applies the model in training mode (``mutable=['batch_stats']``), takes the softmax
cross-entropy of a batch of 8 RGB 16x16 images and its gradient with ``jax.value_and_grad``
(``has_aux`` for the new batch statistics), and returns ``(loss, new_params, new_batch_stats,
new_opt_state)``. ``in_axes`` (for the vmap exhibit) maps the batch; ``model_args`` (for the
flax_params exhibit) are the model's own inputs.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        x = nn.Conv(8, (3, 3), use_bias=False)(x)  # batch norm subtracts any bias
        x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
        x = nn.relu(x)
        x = jnp.mean(x, axis=(-3, -2))
        return nn.Dense(10)(x)


model = CNN()
rng = np.random.default_rng(0)
x = rng.standard_normal((8, 16, 16, 3)).astype(np.float32)
y = rng.integers(0, 10, 8).astype(np.int32)
variables = model.init(jax.random.key(0), x, train=False)
params, batch_stats = variables["params"], variables["batch_stats"]
tx = optax.adam(1e-3)


def loss_fn(params, batch_stats, x, y):
    logits, updates = model.apply(
        {"params": params, "batch_stats": batch_stats}, x, train=True, mutable=["batch_stats"]
    )
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    return loss, updates["batch_stats"]


def f(params, batch_stats, opt_state, x, y):
    (loss, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch_stats, x, y)
    updates, new_opt_state = tx.update(grads, opt_state, params)
    return loss, optax.apply_updates(params, updates), new_stats, new_opt_state


args = (params, batch_stats, tx.init(params), x, y)
in_axes = (None, None, None, 0, 0)
# For the flax_params exhibit, which inits and applies `model` itself: the model's own inputs
# (`args` above are f's). train=False: apply reads the running batch statistics.
model_args = (x, False)

if __name__ == "__main__":
    print(len(jax.make_jaxpr(f)(*args).jaxpr.eqns), "eqns")
    print(jax.jit(f)(*args)[0])
