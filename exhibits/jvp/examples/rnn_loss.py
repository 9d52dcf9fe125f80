"""An Elman RNN run with lax.scan over a short sequence; the loss is the squared error of its
last hidden state against a target (a scalar, so it can be differentiated)."""
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def init_params(rng, d_in=3, d_hidden=4):
    # numpy for the example values: they load instantly (no eager JAX kernels to compile)
    return {
        "w_xh": (rng.standard_normal((d_in, d_hidden)) * 0.3).astype(np.float32),
        "w_hh": (rng.standard_normal((d_hidden, d_hidden)) * 0.3).astype(np.float32),
        "b_h": np.zeros(d_hidden, np.float32),
    }


def f(params, xs, target):
    def step(h, x):
        h = jnp.tanh(x @ params["w_xh"] + h @ params["w_hh"] + params["b_h"])
        return h, None

    h0 = jnp.zeros(params["b_h"].shape)
    h_last, _ = lax.scan(step, h0, xs)
    return jnp.sum((h_last - target) ** 2)


rng = np.random.default_rng(0)
xs = rng.standard_normal((5, 3)).astype(np.float32)
target = rng.standard_normal(4).astype(np.float32)
args = (init_params(rng), xs, target)

if __name__ == "__main__":
    print(jax.make_jaxpr(f)(*args))
    print(jax.grad(f)(*args))
