"""Per-example squared-error loss of a linear model: the parameters are shared (not mapped), the
inputs and targets are mapped along their first axis."""
import jax
import jax.numpy as jnp
import numpy as np


def f(params, x, y):
    pred = jnp.dot(x, params["w"]) + params["b"]  # x: one example, shape (3,)
    return (pred - y) ** 2


rng = np.random.default_rng(0)
params = {"w": np.array([0.5, -1.0, 2.0], np.float32), "b": np.float32(0.1)}
xs = rng.standard_normal((8, 3)).astype(np.float32)
ys = rng.standard_normal(8).astype(np.float32)
args = (params, xs, ys)
in_axes = (None, 0, 0)

if __name__ == "__main__":
    print(jax.make_jaxpr(jax.vmap(f, in_axes))(*args))
