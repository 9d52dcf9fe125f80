"""A GPT-style decoder stack: token and position embeddings, 12 pre-norm blocks (layer norm,
causal multi-head self-attention, layer norm, GELU MLP), a final layer norm, the tied output
projection and the mean next-token cross-entropy. d_model=256, 4 heads, seq 32, vocab 512.

The layers are a Python loop, so the jaxpr holds every layer (~1,000 eqns), each under
``jax.named_scope(f"layer{i}")`` (its eqns' name stack, which the dataflow graph groups by and the
HLO op names carry: ``jit(f)/layer3/dot_general``). ``f`` takes any
leading batch dims: ``args`` hold a batch of 2 sequences, and ``in_axes`` (for the vmap
exhibit) maps one sequence at a time (per-example losses).
"""

import jax
import jax.numpy as jnp
import numpy as np

N_LAYERS = 12
D_MODEL = 256
N_HEADS = 4
SEQ = 32
VOCAB = 512
BATCH = 2


def init_params(rng):
    # numpy for the example values: they load instantly (no eager JAX kernels to compile)
    def normal(*shape, scale=0.02):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def layer():
        return {
            "ln1_g": np.ones(D_MODEL, np.float32),
            "ln1_b": np.zeros(D_MODEL, np.float32),
            "w_q": normal(D_MODEL, D_MODEL),
            "w_k": normal(D_MODEL, D_MODEL),
            "w_v": normal(D_MODEL, D_MODEL),
            "w_o": normal(D_MODEL, D_MODEL),
            "ln2_g": np.ones(D_MODEL, np.float32),
            "ln2_b": np.zeros(D_MODEL, np.float32),
            "w_up": normal(D_MODEL, 4 * D_MODEL),
            "b_up": np.zeros(4 * D_MODEL, np.float32),
            "w_down": normal(4 * D_MODEL, D_MODEL),
            "b_down": np.zeros(D_MODEL, np.float32),
        }

    return {
        "tok_emb": normal(VOCAB, D_MODEL),
        "pos_emb": normal(SEQ, D_MODEL),
        "layers": [layer() for _ in range(N_LAYERS)],
        "ln_f_g": np.ones(D_MODEL, np.float32),
        "ln_f_b": np.zeros(D_MODEL, np.float32),
    }


def layer_norm(x, g, b, eps=1e-5):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def attention(p, x):
    *batch, seq, d = x.shape
    head_dim = d // N_HEADS

    def heads(t):  # [..., seq, d] -> [..., heads, seq, head_dim]
        return jnp.swapaxes(t.reshape(*batch, seq, N_HEADS, head_dim), -3, -2)

    q, k, v = heads(x @ p["w_q"]), heads(x @ p["w_k"]), heads(x @ p["w_v"])
    scores = jnp.einsum("...qd,...kd->...qk", q, k) / np.sqrt(head_dim).astype(np.float32)
    causal = jnp.tril(jnp.ones((seq, seq), bool))
    scores = jnp.where(causal, scores, -1e9)
    weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.swapaxes(jnp.einsum("...qk,...kd->...qd", weights, v), -3, -2)
    return out.reshape(*batch, seq, d) @ p["w_o"]


def mlp(p, x):
    return jax.nn.gelu(x @ p["w_up"] + p["b_up"]) @ p["w_down"] + p["b_down"]


def block(p, x):
    x = x + attention(p, layer_norm(x, p["ln1_g"], p["ln1_b"]))
    return x + mlp(p, layer_norm(x, p["ln2_g"], p["ln2_b"]))


def f(params, tokens, targets):
    x = jnp.take(params["tok_emb"], tokens, axis=0) + params["pos_emb"]
    for i, p in enumerate(params["layers"]):  # unrolled: every layer is in the jaxpr
        with jax.named_scope(f"layer{i}"):  # the eqns' name stack: layer0/..., as in the HLO
            x = block(p, x)
    x = layer_norm(x, params["ln_f_g"], params["ln_f_b"])
    logits = x @ params["tok_emb"].T
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    return jnp.mean(nll)


rng = np.random.default_rng(0)
tokens = rng.integers(0, VOCAB, (BATCH, SEQ)).astype(np.int32)
targets = np.roll(tokens, -1, axis=-1)
args = (init_params(rng), tokens, targets)
in_axes = (None, 0, 0)

if __name__ == "__main__":
    print(len(jax.make_jaxpr(f)(*args).jaxpr.eqns), "eqns")
    print(f(*args))
