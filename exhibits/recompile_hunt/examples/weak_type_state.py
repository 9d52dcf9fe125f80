"""Momentum state started from the Python scalar 0.0 (a weak type): the step returns a strongly
typed float32, so the second step compiles again."""
import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 3)).astype(np.float32)
Y = X @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3


def loss(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def step(params, velocity, x, y):
    grads = jax.grad(loss)(params, x, y)
    velocity = jax.tree.map(lambda v, g: 0.9 * v + g, velocity, grads)
    params = jax.tree.map(lambda p, v: p - 0.1 * v, params, velocity)
    return params, velocity


def f(n):
    params = {"w": np.zeros(3, np.float32), "b": np.float32(0.0)}
    velocity = {"w": np.zeros(3, np.float32), "b": 0.0}  # 0.0: a weak-typed float
    for i in range(n):
        j = i % 4
        params, velocity = step(params, velocity, X[j * 8 : (j + 1) * 8], Y[j * 8 : (j + 1) * 8])
    return params


args = (6,)
