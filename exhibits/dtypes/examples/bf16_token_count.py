# A mean loss over valid tokens, the count taken as a bfloat16 dot of the mask: bfloat16 holds
# every whole number only up to 256, so 4,097 valid tokens come back as 4,096 (ml_dtypes#63;
# cases/DT05). The fix: preferred_element_type=jnp.float32 on the dot.
import jax.numpy as jnp
import numpy as np


def f(losses, mask):
    total = jnp.dot(losses, mask)
    count = jnp.dot(mask, mask)
    return total / count


rng = np.random.default_rng(0)
losses = jnp.asarray(rng.uniform(1.0, 3.0, 5000), jnp.bfloat16)
mask = jnp.asarray(np.arange(5000) < 4097, jnp.bfloat16)
args = (losses, mask)
