"""One SGD train step of an Elman RNN run with ``lax.scan``: hidden size 128, 50 time steps, a
batch of 8 sequences of 16 features, a linear read-out of every hidden state and the mean squared
error against the targets. ``f`` returns ``(loss, new_params)``: the loss before the step and
``params - lr * jax.grad(loss)``, as a train step does.

``xs``/``ys`` are time-major ([50, batch, features]); ``in_axes`` (for the vmap exhibit) maps
the batch axis (1): one train step per sequence.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

HIDDEN = 128
STEPS = 50
BATCH = 8
D_IN = 16
D_OUT = 4
LR = 0.01


def init_params(rng):
    # numpy for the example values: they load instantly (no eager JAX kernels to compile)
    def normal(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    return {
        "w_xh": normal(D_IN, HIDDEN),
        "w_hh": normal(HIDDEN, HIDDEN),
        "b_h": np.zeros(HIDDEN, np.float32),
        "w_hy": normal(HIDDEN, D_OUT),
        "b_y": np.zeros(D_OUT, np.float32),
    }


def loss(params, xs, ys):
    def step(h, x):
        h = jnp.tanh(x @ params["w_xh"] + h @ params["w_hh"] + params["b_h"])
        return h, h @ params["w_hy"] + params["b_y"]

    h0 = jnp.zeros((*xs.shape[1:-1], HIDDEN), xs.dtype)
    _, preds = lax.scan(step, h0, xs)
    return jnp.mean((preds - ys) ** 2)


def f(params, xs, ys):
    value, grads = jax.value_and_grad(loss)(params, xs, ys)
    return value, jax.tree.map(lambda p, g: p - LR * g, params, grads)


rng = np.random.default_rng(0)
xs = rng.standard_normal((STEPS, BATCH, D_IN)).astype(np.float32)
ys = rng.standard_normal((STEPS, BATCH, D_OUT)).astype(np.float32)
args = (init_params(rng), xs, ys)
in_axes = (None, 1, 1)

if __name__ == "__main__":
    print(len(jax.make_jaxpr(f)(*args).jaxpr.eqns), "eqns")
    print(jax.tree.map(lambda a: float(abs(a).sum()), jax.jit(f)(*args)))
