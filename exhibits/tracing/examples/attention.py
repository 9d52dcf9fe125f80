"""A multi-head self-attention block (projections, scaled dot-product, softmax, output)."""
import jax
import jax.numpy as jnp

num_heads = 2


def init_params(key, d_model=8):
    keys = jax.random.split(key, 4)
    scale = 1.0 / jnp.sqrt(d_model)
    return {name: jax.random.normal(k, (d_model, d_model)) * scale
            for name, k in zip(("wq", "wk", "wv", "wo"), keys)}


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


x = jax.random.normal(jax.random.key(1), (4, 8))
args = (init_params(jax.random.key(0)), x, num_heads)
static_argnums = (2,)

if __name__ == "__main__":
    print(jax.make_jaxpr(f, static_argnums=static_argnums)(*args))
    print(f(*args))
