"""The mean loss over valid tokens, with the token count taken as a bfloat16 dot of the mask.

Reports: jax-ml/ml_dtypes#63, "Limited bfloat16 precision breaks reduction operations"
(https://github.com/jax-ml/ml_dtypes/issues/63): bfloat16 holds every whole number only up to
256, so counts and sums above it come back as other numbers; jakevdp's answer there: JAX
accumulates a bfloat16 reduction in float32, but the *result* is still bfloat16. Here 4,097
valid tokens are counted as 4,096 (the dot accumulates in float32 and rounds the count to
bfloat16). JAX raises nothing; the mean is off and so is every count above 256.
"""

import jax.numpy as jnp
import numpy as np


def f(losses, mask):
    total = jnp.dot(losses, mask)
    count = jnp.dot(mask, mask)  # bf16: 4,097 valid tokens come back as 4,096
    return total / count


rng = np.random.default_rng(0)
losses = jnp.asarray(rng.uniform(1.0, 3.0, 5000), jnp.bfloat16)
mask = jnp.asarray(np.arange(5000) < 4097, jnp.bfloat16)
args = (losses, mask)
