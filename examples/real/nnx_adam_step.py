"""One Adam train step of a Flax NNX MLP, written as a pure function of pytrees.

The model (784 -> 256 -> 256 -> 10, ReLU) is split with ``nnx.split`` into its graphdef (closed
over) and its parameter state (``params``, an ``nnx.State``); the optimizer is ``optax.adam``.
``f(params, opt_state, x, y)`` merges the model, takes the softmax cross-entropy of a batch of
32, its gradient with ``jax.value_and_grad``, and returns ``(loss, new_params, new_opt_state)``.
``in_axes`` (for the vmap exhibit) maps the batch: one train step per example. ``model`` (the
class) and ``model_args`` are for the flax_params exhibit, which builds and calls the model.
"""

import jax
import numpy as np
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.fc1 = nnx.Linear(784, 256, rngs=rngs)
        self.fc2 = nnx.Linear(256, 256, rngs=rngs)
        self.out = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x):
        x = jax.nn.relu(self.fc1(x))
        x = jax.nn.relu(self.fc2(x))
        return self.out(x)


graphdef, params = nnx.split(MLP(nnx.Rngs(0)), nnx.Param)
optimizer = optax.adam(1e-3)


def loss_fn(params, x, y):
    model = nnx.merge(graphdef, params)
    logits = model(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def f(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, new_opt_state = optimizer.update(grads, opt_state, params)
    new_params = optax.apply_updates(params, updates)
    return loss, new_params, new_opt_state


rng = np.random.RandomState(0)
x = rng.standard_normal((32, 784)).astype(np.float32)
y = rng.randint(0, 10, 32).astype(np.int32)
args = (params, optimizer.init(params), x, y)
in_axes = (None, None, 0, 0)
# For the flax_params exhibit, which builds `model` itself (`model(rngs=...)`) and calls it: the
# class and the model's own inputs (`args` above are f's).
model = MLP
model_args = (x,)

if __name__ == "__main__":
    print(len(jax.make_jaxpr(f)(*args).jaxpr.eqns), "eqns")
    print(jax.jit(f)(*args)[0])
