"""Per-example gradients of a linear model with a squared loss.

loss(w, x, y) = (x·w − y)² for ONE example, so grad(loss) is the gradient of one example,
2(x·w − y)·x, and vmap(grad(loss), in_axes=(None, 0, 0)) gives one gradient row per example:
the parameters w are shared (None: not mapped), the data x, y are split along axis 0.
Try: swap the two chips (grad outside vmap), or remove in_axes below.
"""

import jax.numpy as jnp
import numpy as np


def f(w, x, y):
    return (jnp.dot(x, w) - y) ** 2


rng = np.random.default_rng(0)
w = jnp.array([0.5, -1.0, 2.0])
x = jnp.asarray(rng.normal(size=(8, 3)), dtype=jnp.float32)
y = jnp.asarray(rng.normal(size=(8,)), dtype=jnp.float32)
args = (w, x, y)
in_axes = (None, 0, 0)
stack = ["vmap", "grad"]
