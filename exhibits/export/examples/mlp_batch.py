# jax.export of a small MLP with a polymorphic batch: the batch dimension of `x` is the
# dimension variable `b`, so the one exported module serves every batch size.
import jax.numpy as jnp
import numpy as np


def f(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


rng = np.random.default_rng(0)
params = {
    "w1": rng.standard_normal((8, 16)).astype(np.float32) / 3,
    "b1": np.zeros(16, np.float32),
    "w2": rng.standard_normal((16, 4)).astype(np.float32) / 4,
    "b2": np.full(4, 0.1, np.float32),
}
x = rng.standard_normal((3, 8)).astype(np.float32)
args = (params, x)
# One shape specification per argument: params keep their shapes, x's batch is `b`.
shapes = [None, "(b, 8)"]
