"""A multi-head self-attention block (projections, scaled dot-product, softmax, output)."""
import jax
import jax.numpy as jnp
import numpy as np

num_heads = 2


def init_params(rng, d_model=8):
    # numpy for the example values: they load instantly (no eager JAX kernels to compile)
    scale = 1.0 / np.sqrt(d_model)
    return {name: (rng.standard_normal((d_model, d_model)) * scale).astype(np.float32)
            for name in ("wq", "wk", "wv", "wo")}


def f(params, x, num_heads):
    seq, d_model = x.shape
    head_dim = d_model // num_heads

    def split_heads(t):  # [seq, d_model] -> [heads, seq, head_dim]
        return t.reshape(seq, num_heads, head_dim).transpose(1, 0, 2)

    q = split_heads(x @ params["wq"])
    k = split_heads(x @ params["wk"])
    v = split_heads(x @ params["wv"])
    scores = jnp.einsum("hqd,hkd->hqk", q, k) / jnp.sqrt(head_dim)
    weights = jax.nn.softmax(scores, axis=-1)
    heads = jnp.einsum("hqk,hkd->hqd", weights, v)
    out = heads.transpose(1, 0, 2).reshape(seq, d_model)
    return x + out @ params["wo"]


rng = np.random.default_rng(0)
x = rng.standard_normal((4, 8)).astype(np.float32)
args = (init_params(rng), x, num_heads)
static_argnums = (2,)

if __name__ == "__main__":
    print(jax.make_jaxpr(f, static_argnums=static_argnums)(*args))
    print(f(*args))
