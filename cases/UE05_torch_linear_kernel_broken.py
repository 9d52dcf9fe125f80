"""A PyTorch ``nn.Linear`` weight used as a Flax ``Dense`` kernel without the transpose.

Report: google/flax#1848 (the "Convert PyTorch Models to Flax" HOWTO and its review thread):
``torch.nn.Linear(in_features=3, out_features=4).weight`` is stored (out, in) = (4, 3), while a
Flax ``Dense`` kernel is (in, out), so the converted kernel must be transposed (huggingface's
converter does ``pt_tensor.T`` for the same reason, huggingface/transformers#11883). Loaded
as is, ``x @ kernel`` contracts the input's 3 features with the kernel's 4 rows and JAX raises
"dot_general requires contracting dimensions to have the same shape, got (3,) and (4,)" at the
matmul (issue 33, class 7: the run fails at that line, with the fix the shapes allow).
"""

import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)
# torch.nn.Linear(in_features=3, out_features=4): weight (4, 3), bias (4,)
torch_weight = rng.normal(size=(4, 3)).astype(np.float32)
torch_bias = rng.normal(size=(4,)).astype(np.float32)


def f(kernel, bias, x):
    return x @ kernel + bias  # a Dense layer: kernel must be (in, out) = (3, 4)


kernel = jnp.asarray(torch_weight)  # loaded as is: (4, 3)
bias = jnp.asarray(torch_bias)
x = jnp.asarray(rng.normal(size=(2, 3)), jnp.float32)
args = (kernel, bias, x)
