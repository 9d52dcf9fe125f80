"""One MLP layer with a softmax: a dense layer, tanh, then softmax over the features.

XLA's story: algsimp folds the softmax's arithmetic, the CPU backend hands the matmul to its dot
library (a kCustom fusion), and the fusion pass fuses the elementwise chains around the two
reductions (max and sum) into loop fusions.
"""

import jax
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)


def f(x, w, b):
    h = jnp.tanh(x @ w + b)
    return jax.nn.softmax(h, axis=-1)


args = (
    rng.standard_normal((8, 16), dtype=np.float32),
    rng.standard_normal((16, 32), dtype=np.float32),
    np.zeros(32, np.float32),
)

if __name__ == "__main__":
    print(jax.jit(f)(*args).sum(axis=-1))
