"""A clean training loop: one jitted step, batches of one shape and dtype: it compiles once."""
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
def step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def f(n):
    params = {"w": np.zeros(3, np.float32), "b": np.float32(0.0)}
    for i in range(n):
        j = i % 4
        params = step(params, X[j * 8 : (j + 1) * 8], Y[j * 8 : (j + 1) * 8])
    return params


args = (6,)
