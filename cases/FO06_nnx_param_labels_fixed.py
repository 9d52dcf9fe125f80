"""The NNX freeze fixed: the labels are made with ``is_leaf`` stopping at each ``nnx.Variable``,
so each label is a plain string and the mask optax builds from them has the gradient's
structure. See ``FO06_nnx_param_labels_broken.py``."""

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
labels = jax.tree.map(
    lambda p: "frozen" if p.ndim == 2 and p.shape[0] == 4 else "train",
    params,
    is_leaf=lambda v: isinstance(v, nnx.Variable),  # one label per Param, unwrapped
)
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
