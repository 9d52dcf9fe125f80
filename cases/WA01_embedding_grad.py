"""The whole gradient of an embedding table: which rows did the batch touch?

Report: pytorch/pytorch#4666 ("nn.Embedding sparse=True not giving sparse gradient"): the user
prints ``emb.weight.grad`` to see that only the looked-up rows are nonzero. The same question in
JAX is ``jax.grad`` of a loss through ``jnp.take``: every row of the (1000, 16) table has a
gradient entry, zero where no token looked it up. 16,000 elements: the page shows the leaf's
summary, and ``jaxscope run transpose --print gradient`` must print all of it (issue 33, class 8),
equal to plain ``jax.grad``.
"""

import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)


def f(params, tokens):
    emb = jnp.take(params["embedding"], tokens, axis=0)  # (8, 16): one row per token
    logits = emb @ params["out"]
    return jnp.mean(jnp.tanh(logits) ** 2)


params = {
    "embedding": jnp.asarray(rng.normal(size=(1000, 16)) / 4, jnp.float32),
    "out": jnp.asarray(rng.normal(size=(16, 4)), jnp.float32),
}
tokens = jnp.array([3, 17, 17, 256, 999, 0, 42, 3])
args = (params, tokens)
