# An affine layer on a pytree of parameters, scaled by a Python float (a weakly typed argument).
import jax.numpy as jnp
import numpy as np


def f(params, x, scale):
    y = jnp.tanh(x @ params["w"] + params["b"]) * scale
    return {"y": y, "norm": jnp.linalg.norm(y)}


params = {"w": np.ones((3, 2), np.float32), "b": np.zeros(2, np.float32)}
args = (params, np.arange(3.0, dtype=np.float32), 2.0)
