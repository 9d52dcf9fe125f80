"""Per-example gradients of a linear layer whose weight is stored (out, in).

Report: danijar/dreamerv3#32 ("TypeError: dot_general requires contracting dimensions to have
the same shape"), the error every mismatched matmul gives. Here the weight is kept as
(out_features, in_features), as PyTorch stores it, and multiplied on the wrong side. The bug is
in ``f``, whatever the transforms: plain ``vmap(f)`` fails at the matmul too, so the run fails
there (issue 33, class 7), not "JAX rejects the stack".
"""

import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)


def f(w, x, y):
    pred = x @ w  # w is (out, in) = (2, 3): x (3,) @ w needs w to be (3, ...)
    return jnp.sum((pred - y) ** 2)


w = jnp.asarray(rng.normal(size=(2, 3)), jnp.float32)
x = jnp.asarray(rng.normal(size=(8, 3)), jnp.float32)
y = jnp.asarray(rng.normal(size=(8, 2)), jnp.float32)
args = (w, x, y)
in_axes = (None, 0, 0)
stack = ["vmap", "grad"]
