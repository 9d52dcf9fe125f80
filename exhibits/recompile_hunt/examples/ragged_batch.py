"""Batches of 4 rows from a dataset of 10: every third batch has 2 rows and its own program."""
import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)
X = rng.normal(size=(10, 3)).astype(np.float32)
Y = X @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3
BATCH = 4


def loss(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def f(n):
    params = {"w": np.zeros(3, np.float32), "b": np.float32(0.0)}
    starts = list(range(0, len(X), BATCH))  # 0, 4, 8: the last batch has 10 - 8 = 2 rows
    for i in range(n):
        s = starts[i % len(starts)]
        params = step(params, X[s : s + BATCH], Y[s : s + BATCH])
    return params


args = (6,)
