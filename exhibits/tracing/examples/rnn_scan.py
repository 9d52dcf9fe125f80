"""An Elman RNN over a sequence with lax.scan, returning the mean of its last hidden state."""
import jax
import jax.numpy as jnp
from jax import lax


def init_params(key, d_in=3, d_hidden=5):
    k1, k2 = jax.random.split(key)
    return {
        "w_xh": jax.random.normal(k1, (d_in, d_hidden)) * 0.3,
        "w_hh": jax.random.normal(k2, (d_hidden, d_hidden)) * 0.3,
        "b_h": jnp.zeros(d_hidden),
    }


def f(params, xs):
    def step(h, x):
        h = jnp.tanh(x @ params["w_xh"] + h @ params["w_hh"] + params["b_h"])
        return h, h

    h0 = jnp.zeros(params["b_h"].shape)
    h_last, hs = lax.scan(step, h0, xs)
    return jnp.mean(h_last), hs


xs = jax.random.normal(jax.random.key(1), (6, 3))
args = (init_params(jax.random.key(0)), xs)

if __name__ == "__main__":
    print(jax.make_jaxpr(f)(*args))
    print(f(*args))
